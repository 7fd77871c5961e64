# Run aa: after the final refactors (the topology read from device handles; thrashing's chunked
# copies in one function): `host info` and its JSON topology, the thrashing GPU test (every way,
# both chunked ones included), and the multi-GPU tests one GPU can run.
set -u
b=target/gpu-bundle
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
mkdir -p /tmp/tt && tar xzf $b/tests.tar.gz -C /tmp/tt
timeout 60 $b/host --backend gpu info --json-out $OUT/info.json > $OUT/info.txt 2>&1; echo "info rc $?" > $OUT/run.txt
timeout 100 /tmp/tt/tests/host-gpu-test --include-ignored thrashing > $OUT/tests.txt 2>&1; echo "thrashing test rc $?" >> $OUT/run.txt
timeout 100 /tmp/tt/tests/host-multi_gpu-test --include-ignored --skip two_gpus >> $OUT/tests.txt 2>&1; echo "multi_gpu-test rc $?" >> $OUT/run.txt
grep -h "test result" $OUT/tests.txt >> $OUT/run.txt
cat $OUT/run.txt; grep -A3 "^Topology" $OUT/info.txt; python3 -c "import json; print(json.load(open('$OUT/info.json'))['topology'])"
