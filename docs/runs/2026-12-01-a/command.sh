b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
nvidia-smi -L > $OUT/env.txt; date -u >> $OUT/env.txt
mkdir -p /tmp/tt && tar xzf $b/tests.tar.gz -C /tmp/tt
TEST_FAMILIES=matmul_tc timeout 200 /tmp/tt/tests/host-gpu-test --include-ignored every_registered > $OUT/gpu-test.txt 2>&1; echo "gpu-test rc=$?" >> $OUT/summary.txt
timeout 120 $b/host --backend gpu matmul-tc --m 8192 --n 8192 --k 8192 --runs 10 > $OUT/demo.txt 2>&1; echo "demo8192 rc=$?" >> $OUT/summary.txt
timeout 60 $b/host --backend gpu matmul-tc --m 4096 --n 4096 --k 4096 --runs 10 >> $OUT/demo.txt 2>&1; echo "demo4096 rc=$?" >> $OUT/summary.txt
for t in memcheck racecheck synccheck; do timeout 100 compute-sanitizer --tool $t --error-exitcode 3 $b/host --backend gpu matmul-tc --m 300 --n 520 --k 100 --runs 1 --warmup 0 > $OUT/san-$t.txt 2>&1; echo "$t rc=$?" >> $OUT/summary.txt; done
cat $OUT/summary.txt
