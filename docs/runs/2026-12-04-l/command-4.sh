#!/usr/bin/env bash
# Run l, part 4 (perf log change 115): runs of k meet in C four sums at a time
# (`red.global.add.v4.f32`; the sm_90a PTX now PTX ISA 8.1). `before` is 5166ddf's host (part 3's
# commit), `now` this commit's. The GPU suite (below; every sm_90a kernel's PTX changed version),
# sanitizers where runs add, before/after at the shapes cut into runs, then the extension's tests
# and the model-shape suite against PyTorch. The GPU suite: the tensor-core matmul ladders.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
x=/tmp/l; mkdir -p $x
for side in before now; do gunzip -c gpud/host_$side.gz > $x/host_$side && chmod +x $x/host_$side; done
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
gpud/t/run.sh $OUT unpack > /dev/null
s=$(date +%s)
TEST_FAMILIES=matmul_bf16,matmul_tc timeout 150 gpud/t/tests/host-gpu-test every_registered_kernel \
  --include-ignored > $OUT/tests.log 2>&1
echo "gpu suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests.log | head
run() { timeout 60 compute-sanitizer --tool $1 --error-exitcode 3 $x/host_now --backend gpu --warmup 0 --runs 1 matmul-bf16 --variant $2 --m $3 --n $4 --k $5 >> $OUT/sanitizer.txt 2>&1; echo "$1 $2 $3x$4x$5 rc $?"; }
{ run memcheck persistent 12 1028 2048; run racecheck persistent 12 1028 2048; run memcheck persistent 128 11008 4096
  run initcheck persistent 12 1028 2048; } > $OUT/sanitizer-rc.txt
cat $OUT/sanitizer-rc.txt; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt | sort | uniq -c
s=$(date +%s)
for mnk in "128 11008 4096" "512 4096 4096" "16 4096 11008" "128 8192 8192" "8192 8192 8192"; do
  set -- $mnk
  echo "-- m=$1 n=$2 k=$3"
  for side in before now before now; do
    $x/host_$side --backend gpu --warmup 3 --runs 20 matmul-bf16 --m $1 --n $2 --k $3 --variant persistent 2>&1 | rows | sed "s/^/$side /"
  done
done > $OUT/before-after.log 2>&1
echo "before/after in $(( $(date +%s) - s )) s"
site=$(mktemp -d)
python3 -m pip install --quiet --no-deps --no-index --target "$site" gpud/bt/python/*.whl
s=$(date +%s)
PYTHONPATH="$site" timeout 60 python3 -m unittest discover -s gpud/bt/python/tests > $OUT/unittest.log 2>&1
echo "unittest rc $? in $(( $(date +%s) - s )) s"; tail -3 $OUT/unittest.log
s=$(date +%s)
PYTHONPATH="$site" timeout 100 python3 gpud/bt/python/bench_models.py --json "$OUT/torch-models.json" > "$OUT/models.log" 2>&1
echo "bench_models rc $? in $(( $(date +%s) - s )) s"; tail -4 "$OUT/models.log"
