# Run p: ldmatrix x1 and x2 (and .trans) beside x4: the mma probe family (now six kernels) in the
# GPU suite and under memcheck and racecheck, matmul_bf16's suite (its ldmatrix rung on the generic
# form), and one checked launch of every kernel.
set -u
b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
mkdir -p /tmp/tt && tar xzf $b/tests.tar.gz -C /tmp/tt
TEST_FAMILIES=mma_probe,matmul_bf16 timeout 150 /tmp/tt/tests/host-gpu-test --include-ignored every_registered > $OUT/tests.txt 2>&1; echo "gpu-test rc $?" > $OUT/run.txt
timeout 60 $b/host --backend gpu mma-probe --blocks 1024 > $OUT/demo.txt 2>&1; echo "demo rc $?" >> $OUT/run.txt
for t in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $t --error-exitcode 3 $b/host --backend gpu mma-probe --blocks 4 --runs 1 --warmup 0 >> $OUT/san.txt 2>&1; echo "$t rc $?" >> $OUT/run.txt
done
timeout 200 $b/host --backend gpu smoke > $OUT/smoke.txt 2>&1; echo "smoke rc $?" >> $OUT/run.txt
grep -E "test result" $OUT/tests.txt >> $OUT/run.txt; grep -c "| pass" $OUT/smoke.txt >> $OUT/run.txt
cat $OUT/run.txt; grep -E "mma_probe" $OUT/demo.txt; grep SUMMARY $OUT/san.txt
