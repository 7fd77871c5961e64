# Run w: change 75 (an experiment): every scan on 8192-element tiles, 32 elements per thread (RUNS
# 4 -> 8 in Rust and in the CUDA C twins' scan.cuh; the look-back rungs bounded to 64 registers,
# four blocks per SM; the pipelined ones to two). Run t found seven of eight warps waiting at the
# barrier for warp 0's look-back; twice the elements per warp halve that wait per element. The
# scan families' GPU suite, memcheck and racecheck, then the scans against their twins and CUB
# from 2^22 to 2^28.
set -u
b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
mkdir -p /tmp/tt /tmp/cc && tar xzf $b/tests.tar.gz -C /tmp/tt
for f in scan_look_back scan_look_back_warp scan_look_back_ordered scan_look_back_backoff scan_look_back_pipelined scan_integer scan_warp_shuffle; do
  nvcc -arch=sm_90a -O3 -ptx $b/cuda-c-src/$f.cu -o /tmp/cc/$f.ptx >> $OUT/nvcc.txt 2>&1 || echo "nvcc $f failed" >> $OUT/run.txt
done
nvcc -arch=sm_90a -O3 -shared -Xcompiler -fPIC $b/cub/anchors.cu -o /tmp/libcub_anchors.so >> $OUT/nvcc.txt 2>&1
export CUB_ANCHORS=/tmp/libcub_anchors.so
TEST_FAMILIES=scan,scan_i32 timeout 200 /tmp/tt/tests/host-gpu-test --include-ignored every_registered > $OUT/tests.txt 2>&1; echo "gpu suite scan rc $?" >> $OUT/run.txt
for t in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $t --error-exitcode 3 $b/host --backend gpu scan --n 1000003 --runs 1 --warmup 0 >> $OUT/san.txt 2>&1; echo "$t scan rc $?" >> $OUT/run.txt
done
for n in 4194304 16777216 67108864 268435456; do
  timeout 100 $b/host --backend gpu --cuda-c /tmp/cc scan --n $n --json-out $OUT/scan_$n.json >> $OUT/scan.txt 2>&1; echo "scan $n rc $?" >> $OUT/run.txt
done
timeout 100 $b/host --backend gpu --cuda-c /tmp/cc scan-i32 --n 268435456 >> $OUT/scan.txt 2>&1; echo "scan-i32 rc $?" >> $OUT/run.txt
for f in /tmp/cc/scan_look_back_ordered.ptx /tmp/cc/scan_look_back_warp.ptx; do ptxas -arch=sm_90a -v $f -o /tmp/x.cubin >> $OUT/ptxas.txt 2>&1; done
grep -h "test result" $OUT/tests.txt >> $OUT/run.txt
cat $OUT/run.txt; grep -E "SUMMARY" $OUT/san.txt; grep -E "registers" $OUT/ptxas.txt; grep -E "Rust/CUDA C|cub_inclusive|look_back_ordered  |look_back_warp  " $OUT/scan.txt | cut -c1-150
