#!/usr/bin/env bash
# Run k, part 5: runs of k wherever C's tiles fill the waves badly (`tile_order::runs_for`: the
# count of runs needing the fewest waves of items per run, taken where it saves a twentieth, up to
# four waves of tiles), no longer only where C has fewer tiles than the GPU has places. `before` is
# 4718698's host (parts 1–4), `now` this commit's. Shapes with 86–384 tiles, before and after
# beside cuBLAS; then the suite through the operators, the GPU family suite, and compute-sanitizer
# on the two rungs (our kernels only) at shapes that now split across two waves.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
x=/tmp/k; mkdir -p $x
for side in before now; do gunzip -c gpud/host_$side.gz > $x/host_$side && chmod +x $x/host_$side; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
s=$(date +%s)
for fvs in "matmul-tc wgmma 128x11008x4096" "matmul-tc wgmma 128x12288x4096" "matmul-tc wgmma 128x28672x4096" \
           "matmul-tc wgmma 512x11008x4096" "matmul-tc wgmma 8192x8192x8192" "matmul-bf16 persistent 128x28672x4096" \
           "matmul-bf16 persistent 512x28672x4096" "matmul-bf16 persistent 2048x6144x4096" "matmul-bf16 persistent 8192x8192x8192"; do
  set -- $fvs; IFS=x read -r m n k <<< "$3"
  echo "-- $1 $2 m=$m n=$n k=$k"
  for side in before now before now; do
    $x/host_$side --backend gpu --warmup 3 --runs 20 $1 --m $m --n $n --k $k --variant $2 2>&1 | rows | sed "s/^/$side /"
  done
done > $OUT/before-after.log 2>&1
echo "before/after in $(( $(date +%s) - s )) s"
site=$(mktemp -d)
python3 -m pip install --quiet --no-deps --no-index --target "$site" gpud/bt/python/*.whl
s=$(date +%s)
PYTHONPATH="$site" timeout 200 python3 gpud/bt/python/bench_models.py --json "$OUT/torch-models.json" > "$OUT/models.log" 2>&1
echo "bench_models rc $? in $(( $(date +%s) - s )) s"; tail -3 "$OUT/models.log"
gpud/t/run.sh $OUT unpack > /dev/null 2>&1
s=$(date +%s)
TEST_FAMILIES=matmul,matmul_tc,matmul_bf16 timeout 200 gpud/t/tests/host-gpu-test every_registered_kernel \
  --include-ignored > $OUT/tests.log 2>&1
echo "gpu suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests.log | head
run() { timeout 100 compute-sanitizer --tool $1 --kernel-name kns=matmul_ --error-exitcode 3 $x/host_now --backend gpu --warmup 0 --runs 1 $2 --variant $3 --m $4 --n $5 --k $6 >> $OUT/sanitizer.txt 2>&1; echo "$1 $3 $4x$5x$6 rc $?"; }
for v in "matmul-bf16 persistent" "matmul-tc wgmma"; do
  set -- $v
  for tool in memcheck racecheck synccheck initcheck; do run $tool $1 $2 12 1027 2051; done
  run memcheck $1 $2 128 11008 4096
  run racecheck $1 $2 128 11008 4096
done > $OUT/sanitizer-rc.txt
cat $OUT/sanitizer-rc.txt; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt | sort | uniq -c
