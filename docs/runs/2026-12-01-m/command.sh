# Run m: the CUDA C twin of matmul_tc_wgmma (benches/reference/cuda_c/matmul_tc_wgmma.cu) beside
# the Rust kernel on the TF32 ladder's edge shapes, 4096³ and 8192³, memcheck and racecheck over
# both producer paths; the bf16 twins after their Hopper helpers moved to hopper.cuh.
set -u
b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
src=benches/reference/cuda_c
mkdir -p /tmp/cc
for k in matmul_tc_wgmma matmul_tc_tf32 matmul_bf16_pipelined matmul_bf16_wgmma matmul_bf16_specialized; do
  nvcc -arch=sm_90a -O3 -ptx $src/$k.cu -o /tmp/cc/$k.ptx >> $OUT/nvcc.txt 2>&1; echo "nvcc $k rc $?" >> $OUT/run.txt
done
ptxas -arch=sm_90a -v /tmp/cc/matmul_tc_wgmma.ptx -o /tmp/cc/t.cubin >> $OUT/nvcc.txt 2>&1
for s in "1 1 1" "31 31 31" "33 33 33" "33 31 1" "1000 33 31" "31 1000 3" "2 3 1000" "64 96 48" "17 65 130" "509 257 131" "128 256 16" "129 255 9" "300 520 100" "4097 3073 2049"; do
  set -- $s
  timeout 60 $b/host --backend gpu --cuda-c /tmp/cc matmul-tc --m $1 --n $2 --k $3 --runs 1 --warmup 0 >> $OUT/edges.txt 2>&1; echo "edge $s rc $?" >> $OUT/run.txt
done
for s in "4096 4096 4096" "8192 8192 8192"; do
  set -- $s
  timeout 90 $b/host --backend gpu --cuda-c /tmp/cc matmul-tc --m $1 --n $2 --k $3 --runs 10 >> $OUT/perf.txt 2>&1; echo "perf $s rc $?" >> $OUT/run.txt
done
timeout 60 $b/host --backend gpu --cuda-c /tmp/cc matmul-bf16 --m 70 --n 136 --k 200 --runs 1 --warmup 0 >> $OUT/edges.txt 2>&1; echo "bf16 rc $?" >> $OUT/run.txt
for t in memcheck racecheck; do for s in "300 520 100" "301 519 99"; do set -- $s
  timeout 90 compute-sanitizer --tool $t --error-exitcode 3 $b/host --backend gpu --cuda-c /tmp/cc matmul-tc --m $1 --n $2 --k $3 --runs 1 --warmup 0 >> $OUT/san.txt 2>&1; echo "$t $s rc $?" >> $OUT/run.txt
done; done
tr "\n" ";" < $OUT/run.txt; echo
grep -c "| pass" $OUT/edges.txt; grep -E "FAIL|fail" $OUT/edges.txt | head -5; grep -E "matmul_tc_wgmma|Used|spill|C75" $OUT/nvcc.txt | head -8
grep -E "wgmma|cublas" $OUT/perf.txt
