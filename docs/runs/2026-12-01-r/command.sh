# Run r: `host multi-gpu` on the one-GPU runner after run q's fix (a repeated device now skips the
# NCCL scenario instead of ending the run): every scenario with device 0 playing both parts at full
# size (1 GiB for peer and managed, 8192³ for split), memcheck over them at a small size, the
# multi-GPU tests again, and the bench's multi_gpu case (which needs two GPUs and must say so).
set -u
b=target/gpu-bundle
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
mkdir -p /tmp/tt && tar xzf $b/tests.tar.gz -C /tmp/tt
timeout 240 $b/host --backend gpu multi-gpu --devices 0,0 --runs 10 --json-out $OUT/multi.json > $OUT/multi.txt 2>&1; echo "multi-gpu 0,0 rc $?" > $OUT/run.txt
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 3 $b/host --backend gpu multi-gpu --devices 0,0 --floats 1048576 --shape 257x129x65 --runs 1 --warmup 0 > $OUT/san.txt 2>&1; echo "memcheck multi-gpu rc $?" >> $OUT/run.txt
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 3 $b/host --backend gpu multi-gpu collective --devices 0 --shape 257x129x65 --runs 1 --warmup 0 >> $OUT/san.txt 2>&1; echo "memcheck collective rc $?" >> $OUT/run.txt
timeout 120 /tmp/tt/tests/host-multi_gpu-test --include-ignored --skip two_gpus > $OUT/tests.txt 2>&1; echo "multi_gpu-test rc $?" >> $OUT/run.txt
BENCH_FAMILIES=multi_gpu BENCH_JSON=$OUT/bench.json timeout 60 $b/bench-kernels --bench > $OUT/bench.txt 2>&1; echo "bench multi_gpu rc $?" >> $OUT/run.txt
grep -h "test result" $OUT/tests.txt >> $OUT/run.txt
cat $OUT/run.txt; cut -c1-230 $OUT/multi.txt; grep -E "SUMMARY" $OUT/san.txt; tail -3 $OUT/bench.txt
