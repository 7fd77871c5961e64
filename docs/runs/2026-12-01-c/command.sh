b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
nvidia-smi -L > $OUT/env.txt; date -u >> $OUT/env.txt
mkdir -p /tmp/tt && tar xzf $b/tests.tar.gz -C /tmp/tt
TEST_FAMILIES=matmul_tc timeout 200 /tmp/tt/tests/host-gpu-test --include-ignored every_registered > $OUT/gpu-test.txt 2>&1; echo "gpu-test rc=$?" >> $OUT/summary.txt
timeout 120 $b/host --backend gpu matmul-tc --m 8192 --n 8192 --k 8192 --runs 10 > $OUT/demo.txt 2>&1; echo "demo8192 rc=$?" >> $OUT/summary.txt
for s in "4096 4096 4096" "2048 2048 2048" "4097 3073 2049"; do set -- $s; timeout 60 $b/host --backend gpu matmul-tc --m $1 --n $2 --k $3 --runs 10 >> $OUT/demo.txt 2>&1; echo "demo $s rc=$?" >> $OUT/summary.txt; done
for t in memcheck racecheck synccheck; do timeout 100 compute-sanitizer --tool $t --error-exitcode 3 $b/host --backend gpu matmul-tc --m 300 --n 520 --k 100 --runs 1 --warmup 0 > $OUT/san-$t.txt 2>&1; echo "$t rc=$?" >> $OUT/summary.txt; done
cat $OUT/summary.txt | tr "\n" " "
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 $b/host --backend gpu matmul-tc --m 301 --n 519 --k 99 --runs 1 --warmup 0 > $OUT/san-memcheck-odd.txt 2>&1; echo "memcheck odd rc=$?" >> $OUT/summary.txt
tail -1 $OUT/summary.txt; grep -h "test result" $OUT/gpu-test.txt; grep -hE "cublas|wgmma" $OUT/demo.txt
timeout 120 ncu --kernel-name matmul_tc_wgmma --launch-skip 3 --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy $b/host --backend gpu matmul-tc --m 4096 --n 4096 --k 4096 --runs 2 --warmup 1 > $OUT/ncu.txt 2>&1; echo "ncu rc=$?"
grep -E "Throughput|Stall|Busy|Pipe|Issue|Bank|Achieved|Duration" $OUT/ncu.txt | head -30
