# Run s: issue 12's last pieces and the managed-memory tests after ManagedBuffer learned several
# streams: stream-attached memory (the consistency test, and thrashing's seventh way: two arrays on
# two streams, the CPU reading one while the GPU writes the other), the prefetch to the host split
# into 8 pieces on 8 streams (migration up to 1 GiB); the multi-GPU tests again (the mapped read's
# migration check now judged only on two devices and from 64 MiB), and memcheck over NCCL's
# split-k with the CUDA API errors NCCL raises itself while probing its kernels not reported.
set -u
b=target/gpu-bundle
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
mkdir -p /tmp/tt && tar xzf $b/tests.tar.gz -C /tmp/tt
timeout 150 /tmp/tt/tests/host-gpu-test --include-ignored managed attached > $OUT/tests_managed.txt 2>&1; echo "gpu-test managed rc $?" > $OUT/run.txt
timeout 100 /tmp/tt/tests/host-gpu_pipeline-test --include-ignored >> $OUT/tests_managed.txt 2>&1; echo "gpu_pipeline-test rc $?" >> $OUT/run.txt
timeout 60 /tmp/tt/tests/host-gpu_external-test --include-ignored >> $OUT/tests_managed.txt 2>&1; echo "gpu_external-test rc $?" >> $OUT/run.txt
timeout 120 /tmp/tt/tests/host-multi_gpu-test --include-ignored --skip two_gpus > $OUT/tests.txt 2>&1; echo "multi_gpu-test rc $?" >> $OUT/run.txt
timeout 90 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3 $b/host --backend gpu multi-gpu collective --devices 0 --shape 257x129x65 --runs 1 --warmup 0 > $OUT/san.txt 2>&1; echo "memcheck collective rc $?" >> $OUT/run.txt
timeout 150 $b/host --backend gpu managed thrashing --json-out $OUT/thrashing.json > $OUT/thrashing.txt 2>&1; echo "thrashing rc $?" >> $OUT/run.txt
timeout 150 $b/host --backend gpu managed migration --max-mib 1024 --json-out $OUT/migration.json > $OUT/migration.txt 2>&1; echo "migration rc $?" >> $OUT/run.txt
grep -h "test result" $OUT/tests*.txt >> $OUT/run.txt
cat $OUT/run.txt; cut -c1-200 $OUT/thrashing.txt; grep -E "to the host|to the GPU" $OUT/migration.txt | cut -c1-200; grep SUMMARY $OUT/san.txt; grep -h -E "FAILED|panicked" -A6 $OUT/tests*.txt | head -30
