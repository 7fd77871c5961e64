# Run ab: the first run on two H200s (nvidia-h200-x2), for issue 13: the topology as the driver and
# nvidia-smi report it, every multi-GPU test (the two-GPU ones included), `host multi-gpu` on both
# devices and the bench's multi_gpu cases. NVLink multicast stays off (run.sh sets it too).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ nvidia-smi topo -m; nvidia-smi nvlink -s; } > $OUT/topology-smi.txt 2>&1
head -8 $OUT/topology-smi.txt
timeout 560 bash target/gpu-bundle/run.sh $OUT multi
