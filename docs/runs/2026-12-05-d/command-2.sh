#!/usr/bin/env bash
# Run 2026-12-05 d, fifth call (carry ["gpud"], bundles of 34dde09 built as in command.sh): softmax
# and the row reductions over narrow rows (groups of lanes, warps going round): the GPU suite of the
# three families, the special values, compute-sanitizer on the narrow paths, the kernels beside
# their twins at narrow shapes, then the size sweep of the three operators and bench_torch's rows.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
exec > >(tee -a "$OUT/part-e.txt") 2>&1
x=/tmp/r; mkdir -p $x
gunzip -c gpud/host_now.gz > $x/host && chmod +x $x/host
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
gpud/t/run.sh $OUT unpack > /dev/null
s=$(date +%s)
TEST_FAMILIES=softmax,row_sum,row_max timeout 120 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests.log 2>&1
echo "gpu suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests.log | head
timeout 120 gpud/t/tests/host-special_values-test --include-ignored > $OUT/special.log 2>&1
echo "special values rc $?"; grep -E "test result|FAILED" $OUT/special.log | head
for tool in memcheck racecheck synccheck initcheck; do
  for cmd in "softmax --rows 1000 --cols 1" "softmax --rows 777 --cols 32" "softmax --rows 99 --cols 127" \
             "row-sum --rows 1001 --cols 3" "row-max --rows 333 --cols 16"; do
    timeout 40 compute-sanitizer --tool $tool --error-exitcode 3 $x/host --backend gpu --warmup 0 --runs 1 $cmd >> $OUT/sanitizer.txt 2>&1
    echo "$tool $cmd rc $?"
  done
done > $OUT/sanitizer-rc.txt
echo "sanitizer: $(grep -c 'rc 0' $OUT/sanitizer-rc.txt) of $(wc -l < $OUT/sanitizer-rc.txt) clean"; grep -v "rc 0" $OUT/sanitizer-rc.txt | head
s=$(date +%s); gpud/t/run.sh $OUT prep > /dev/null 2>&1; echo "prep rc $? in $(( $(date +%s) - s )) s"
for cmd in "softmax --rows 67108864 --cols 1" "softmax --rows 2097152 --cols 32" "softmax --rows 524288 --cols 128" \
           "softmax --rows 262144 --cols 256" "softmax --rows 65536 --cols 1024" \
           "row-sum --rows 67108864 --cols 1" "row-sum --rows 16777216 --cols 4" "row-sum --rows 4194304 --cols 16" \
           "row-max --rows 22369621 --cols 3" "row-sum --rows 65536 --cols 1024"; do
  timeout 60 $x/host --backend gpu --cuda-c gpud/t/cuda-c --warmup 3 --runs 20 $cmd --variant auto 2>&1 | rows
done > $OUT/speed.log 2>&1
cat $OUT/speed.log
site=/tmp/site; python3 -m pip install --quiet --no-deps --no-index --target "$site" gpud/bt/python/*.whl
s=$(date +%s)
PYTHONPATH="$site:gpud/bt/python" timeout 200 python3 gpud/bt/python/bench_sizes.py --ops softmax,row_sum,row_max --max-log2 28 --json "$OUT/torch-sizes.json" > "$OUT/sizes.log" 2>&1
echo "bench_sizes rc $? in $(( $(date +%s) - s )) s"; grep -vE "^\[" "$OUT/sizes.log"; grep -E "x(1|2|3|4|8|16|32|64|128|256) " "$OUT/sizes.log" | grep -E "\] (softmax|row_sum|row_max) +[0-9]{6,}x" | head -40
PYTHONPATH="$site" timeout 100 python3 gpud/bt/python/bench_torch.py --no-overhead --ops softmax,row_sum,row_max > "$OUT/torch-ops.log" 2>&1
echo "bench_torch rc $?"; cat "$OUT/torch-ops.log"
