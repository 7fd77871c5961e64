#!/usr/bin/env bash
# Run l, part 3: the final store (the vector path a branch of its own, taken where C and its rows are
# 16-byte aligned and nothing adds; elsewhere the element loop exactly as before: part 2 left the
# unaligned LM head 13 % slower). GPU suite of the bf16 and TF32 ladders, sanitizers, before/after at the
# shapes of part 1, then the extension's tests and the model-shape suite against PyTorch.
# gpud/bt (not in git): `cargo xtask gpu-bundle --for torch`.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
x=/tmp/l; mkdir -p $x
for side in before now; do gunzip -c gpud/host_$side.gz > $x/host_$side && chmod +x $x/host_$side; done
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
gpud/t/run.sh $OUT unpack > /dev/null
s=$(date +%s)
TEST_FAMILIES=matmul_bf16,matmul_tc timeout 200 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored \
  > $OUT/tests.log 2>&1
echo "gpu suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests.log | head
run() { timeout 60 compute-sanitizer --tool $1 --error-exitcode 3 $x/host_now --backend gpu --warmup 0 --runs 1 matmul-bf16 --variant $2 --m $3 --n $4 --k $5 >> $OUT/sanitizer.txt 2>&1; echo "$1 $2 $3x$4x$5 rc $?"; }
{ run memcheck persistent 130 1027 520; run memcheck persistent 12 1027 2051; run memcheck persistent 12 1028 2048
  run racecheck persistent 12 1028 2048; run initcheck persistent 130 1027 520; } > $OUT/sanitizer-rc.txt
cat $OUT/sanitizer-rc.txt; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt | sort | uniq -c
s=$(date +%s)
for mnk in "12608 768 768" "16384 3072 768" "4096 4096 1024" "8192 28672 4096" "8192 8192 8192" "1024 50257 768" \
           "128 50257 768" "16 4096 11008"; do
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
PYTHONPATH="$site" timeout 200 python3 -m unittest discover -s gpud/bt/python/tests > $OUT/unittest.log 2>&1
echo "unittest rc $? in $(( $(date +%s) - s )) s"; tail -3 $OUT/unittest.log
s=$(date +%s)
PYTHONPATH="$site" timeout 200 python3 gpud/bt/python/bench_models.py --json "$OUT/torch-models.json" > "$OUT/models.log" 2>&1
echo "bench_models rc $? in $(( $(date +%s) - s )) s"; tail -4 "$OUT/models.log"
