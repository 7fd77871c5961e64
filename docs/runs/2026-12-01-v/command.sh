# Run v: after the multi-GPU refactor (one home for the one-GPU baseline and the operands), the
# bundle's new `run.sh OUT multi` mode tried on the one-GPU runner (the two_gpus_* tests must fail
# here with "no CUDA device 1", and the bench must say it needs two GPUs), then the multi-GPU tests
# one GPU can run, and NCCL's split-k on device 0 at 4096^3.
set -u
b=target/gpu-bundle
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
timeout 420 bash $b/run.sh $OUT multi > $OUT/run-multi.txt 2>&1; echo "run.sh multi rc $?" > $OUT/run.txt
timeout 100 $b/tests/host-multi_gpu-test --include-ignored --skip two_gpus > $OUT/tests.txt 2>&1; echo "multi_gpu-test (one GPU) rc $?" >> $OUT/run.txt
timeout 60 $b/host --backend gpu multi-gpu collective --devices 0 --shape 4096x4096x4096 > $OUT/collective.txt 2>&1; echo "collective rc $?" >> $OUT/run.txt
grep -h "test result" $OUT/tests.txt $OUT/tests-multi.log >> $OUT/run.txt
cat $OUT/run.txt; cat $OUT/run-multi.txt | cut -c1-200 | tail -40; cut -c1-200 $OUT/collective.txt
