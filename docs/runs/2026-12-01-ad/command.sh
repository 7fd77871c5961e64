# Run ad: issue 13 on two H200s after the fix of run ac's finding (a kernel on one GPU reading the
# other's stream-ordered pool memory needs the pool's own access list, which peer access leaves
# alone). First each scenario alone at small sizes (no CUDA_LAUNCH_BLOCKING: it deadlocks NCCL's
# collective, whose kernels on the two GPUs wait for each other), then run.sh's multi mode.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 NCCL_DEBUG=WARN
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
h=target/gpu-bundle/host
for s in peer collective; do
  echo "== $s --devices 0,1" >> $OUT/scenarios.txt
  timeout 60 $h --backend gpu multi-gpu $s --devices 0,1 --floats 1048576 --shape 512x512x512 >> $OUT/scenarios.txt 2>&1
  echo "rc $?" >> $OUT/scenarios.txt
done
grep -E "^== |^rc |rror" $OUT/scenarios.txt
timeout 90 compute-sanitizer --tool memcheck --print-limit 5 $h --backend gpu multi-gpu peer --devices 0,1 --floats 65536 > $OUT/memcheck.txt 2>&1
echo "memcheck rc $?"; grep "ERROR SUMMARY" $OUT/memcheck.txt
timeout 420 bash target/gpu-bundle/run.sh $OUT multi
