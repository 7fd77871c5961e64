# Run ae: issue 13 on two H200s after two ordering fixes: the end-to-end split queued in phases
# (every part's inputs, every product, every C back), and managed buffers that let readers on
# several streams run at once (a writer still waits for every use). The managed-memory GPU tests
# (the new readers/writer test among them), then run.sh's multi mode.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 NCCL_DEBUG=WARN
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
mkdir -p /tmp/tt && tar xzf target/gpu-bundle/tests.tar.gz -C /tmp/tt
timeout 200 /tmp/tt/tests/host-gpu-test --include-ignored managed shared attached > $OUT/tests-managed.txt 2>&1
echo "managed tests rc $?"; grep -E "^test |test result|panicked" $OUT/tests-managed.txt
timeout 360 bash target/gpu-bundle/run.sh $OUT multi
