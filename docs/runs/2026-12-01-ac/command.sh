# Run ac: where run ab's illegal address comes from. Each scenario alone on devices 0,1 at small
# sizes (the first failing call named with CUDA_LAUNCH_BLOCKING=1), then compute-sanitizer's memcheck
# on each at small sizes.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
h=target/gpu-bundle/host
for s in peer managed split collective; do
  for d in 0,1 1,0 0,0 1,1; do
    echo "== $s --devices $d" >> $OUT/scenarios.txt
    CUDA_LAUNCH_BLOCKING=1 RUST_BACKTRACE=1 timeout 60 $h --backend gpu multi-gpu $s --devices $d --floats 1048576 --shape 512x512x512 >> $OUT/scenarios.txt 2>&1
    echo "rc $?" >> $OUT/scenarios.txt
  done
done
grep -E "^== |^rc |rror" $OUT/scenarios.txt
for s in peer managed split; do
  echo "== memcheck $s" >> $OUT/memcheck.txt
  timeout 90 compute-sanitizer --tool memcheck --print-limit 5 $h --backend gpu multi-gpu $s --devices 0,1 --floats 65536 --shape 256x256x256 >> $OUT/memcheck.txt 2>&1
  echo "rc $?" >> $OUT/memcheck.txt
done
grep -E "^== |^rc |========= (Invalid|ERROR|Program hit)|at .*0x" $OUT/memcheck.txt | head -60
