#!/usr/bin/env bash
# Run ag: the PyTorch extension again (fixed tests, the torch fast path, warm bench), the prefetch
# pipeline with its one-way variant (PNG timeline), transposes at aligned and awkward shapes of one
# size, then the migration sweep (2 MiB to 16 GiB) last, under its own limit.
set -u
b=target/gpu-bundle
timeout 200 bash $b/run.sh $OUT torch > $OUT/run.txt 2>&1
echo "torch rc $?" >> $OUT/run.txt
{
timeout 100 $b/host --backend gpu managed pipeline --timeline $OUT/timeline.png
echo "pipeline rc $?"
for s in "8192 4096" "8188 4096" "8191 4097"; do
  set -- $s
  for v in transpose_vectorized_t64 transpose_peeled; do
    timeout 40 $b/host --backend gpu transpose --rows $1 --cols $2 --variant $v --runs 30
  done
done
} > $OUT/demos.txt 2>&1
grep "rc " $OUT/demos.txt >> $OUT/run.txt
timeout 270 $b/host --backend gpu managed migration > $OUT/migration.txt 2>&1
echo "migration rc $?" >> $OUT/run.txt
