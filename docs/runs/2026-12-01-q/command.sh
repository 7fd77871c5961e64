# Run q (tenth session): issue 13 on the one-GPU runner (the two-GPU kind was not lent): topology in
# `host info`, the multi-GPU tests that one GPU can run (0,0 plays both parts; NCCL with one rank),
# every scenario of `host multi-gpu` on 0,0 at full size, NCCL's split-k on device 0, memcheck over
# the scenarios at a small size; the managed-memory tests again (ManagedBuffer now tracks several
# streams) and the attention suite (not run since the ldmatrix refactor).
set -u
b=target/gpu-bundle
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
mkdir -p /tmp/tt && tar xzf $b/tests.tar.gz -C /tmp/tt
timeout 60 $b/host --backend gpu info > $OUT/info.txt 2>&1; echo "info rc $?" > $OUT/run.txt
timeout 120 /tmp/tt/tests/host-multi_gpu-test --include-ignored --skip two_gpus > $OUT/tests.txt 2>&1; echo "multi_gpu-test rc $?" >> $OUT/run.txt
timeout 120 /tmp/tt/tests/host-gpu-test --include-ignored managed > $OUT/tests_managed.txt 2>&1; echo "gpu-test managed rc $?" >> $OUT/run.txt
timeout 100 /tmp/tt/tests/host-gpu_pipeline-test --include-ignored >> $OUT/tests_managed.txt 2>&1; echo "gpu_pipeline-test rc $?" >> $OUT/run.txt
timeout 60 /tmp/tt/tests/host-gpu_external-test --include-ignored >> $OUT/tests_managed.txt 2>&1; echo "gpu_external-test rc $?" >> $OUT/run.txt
timeout 150 $b/host --backend gpu multi-gpu --devices 0,0 --runs 10 --json-out $OUT/multi.json > $OUT/multi.txt 2>&1; echo "multi-gpu 0,0 rc $?" >> $OUT/run.txt
timeout 60 $b/host --backend gpu multi-gpu collective --devices 0 --runs 10 --json-out $OUT/collective.json > $OUT/collective.txt 2>&1; echo "collective 0 rc $?" >> $OUT/run.txt
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 3 $b/host --backend gpu multi-gpu --devices 0,0 --floats 1048576 --shape 257x129x65 --runs 1 --warmup 0 > $OUT/san.txt 2>&1; echo "memcheck multi-gpu rc $?" >> $OUT/run.txt
TEST_FAMILIES=attention,attention_causal timeout 120 /tmp/tt/tests/host-gpu-test --include-ignored every_registered > $OUT/tests_attention.txt 2>&1; echo "attention suite rc $?" >> $OUT/run.txt
grep -h "test result" $OUT/tests*.txt >> $OUT/run.txt
cat $OUT/run.txt; cat $OUT/multi.txt $OUT/collective.txt | cut -c1-220; grep -A12 Topology $OUT/info.txt; grep -E "SUMMARY|ERROR" $OUT/san.txt | head; grep -E "FAILED|panicked" -A5 $OUT/tests*.txt | head -40
