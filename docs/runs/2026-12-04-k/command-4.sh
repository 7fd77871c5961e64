#!/usr/bin/env bash
# Run k, part 4: the bands only where C is wide (a wave in row order would hold fewer than four
# rows of tiles), and never on the TF32 rung, after part 1 showed the bands 3–9 % slower at large
# m with n up to 8192 (bf16) and on most TF32 shapes. Same binaries' roles as part 1: before is
# 54c1b35's, now this commit's. Then the suite through the operators, the GPU family suite, and
# compute-sanitizer on the two rungs at a split shape (only our kernels: --kernel-name).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
x=/tmp/k; mkdir -p $x
for side in before now; do gunzip -c gpud/host_$side.gz > $x/host_$side && chmod +x $x/host_$side; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
s=$(date +%s)
for fv in "matmul-bf16 persistent" "matmul-tc wgmma"; do
  set -- $fv
  for mnk in "8192 28672 4096" "8192 8192 8192" "8192 4096 11008" "16384 3072 768" "2048 8192 8192" \
             "8192 10240 8192" "128 4096 14336"; do
    set -- $1 $2 $mnk
    echo "-- $1 $2 m=$3 n=$4 k=$5"
    for side in before now; do
      $x/host_$side --backend gpu --warmup 3 --runs 20 $1 --m $3 --n $4 --k $5 --variant $2 2>&1 | rows | sed "s/^/$side /"
    done
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
run() { timeout 100 compute-sanitizer --tool $1 --kernel-name regex:matmul --error-exitcode 3 $x/host_now --backend gpu --warmup 0 --runs 1 $2 --variant $3 --m $4 --n $5 --k $6 >> $OUT/sanitizer.txt 2>&1; echo "$1 $3 $4x$5x$6 rc $?"; }
for v in "matmul-bf16 persistent" "matmul-tc wgmma"; do
  set -- $v
  for tool in memcheck racecheck synccheck; do run $tool $1 $2 12 1027 2051; done
  run racecheck $1 $2 16 4096 11008
done > $OUT/sanitizer-rc.txt
cat $OUT/sanitizer-rc.txt; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt | sort | uniq -c
