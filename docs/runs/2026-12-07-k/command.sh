#!/usr/bin/env bash
# Run 2026-12-07 k: issue 42's FP8 GEMM ladder, first on a GPU. carry ["gpud"]: gpud/host_fp8.gz
# (`cargo build --release -p host`, stripped, from the tree with `matmul_fp8` and its row-wise
# and block-scaled families). Steps, most
# important first:
#   1: every FP8 kernel checked at the family's edge shapes and a few large ones (the host demo's
#      check column: the f64 reference with the bound for FP8 tensor-core sums), and the
#      quantisation family's (codes and scales exact);
#   2: the FP8 tiles timed at the bench shapes; the extension's matmul_fp8 beside PyTorch's
#      torch._scaled_mm in one process (scaled_mm.py, fast accumulation and not; gpud/bt the wheel,
#      `cargo xtask gpu-bundle --for torch --out gpud/bt`), and its test against PyTorch;
#   3: compute-sanitizer (memcheck, racecheck, synccheck) on the persistent and clustered FP8
#      tiles at a shape with runs of k and edge tiles.
# Then run j's part 4 (`bash docs/runs/2026-12-07-j/command.sh 4`), where time is left.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
exec > >(tee -a "$OUT/k.txt") 2>&1
x=/tmp/r; mkdir -p $x
gunzip -c gpud/host_fp8.gz > $x/host_fp8 && chmod +x $x/host_fp8
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader; date -u
start=$(date +%s)
step() { echo "== step $1 at $(( $(date +%s) - start )) s"; }
step 1
for shape in "1 1 1" "31 33 17" "33 31 130" "64 136 200" "130 72 256" "129 255 9" "17 65 131" "1 1027 515" "33 515 2051" "130 1030 1100" "4096 1000 333" "128 4096 4096" "2100 4100 1000"; do
  set -- $shape
  timeout 60 $x/host_fp8 --backend gpu --warmup 0 --runs 1 matmul-fp8 --m $1 --n $2 --k $3 2>&1 | rows | awk -F'|' '{print $3, $4, $8}'
done
echo "-- matmul_fp8_rowwise: every kernel checked (row-wise scales)"
for shape in "1 1 1" "31 33 17" "33 31 130" "130 72 256" "17 65 131" "33 515 2051" "130 1030 1100" "4096 1000 333" "128 4096 4096" "2100 4100 1000"; do
  set -- $shape
  timeout 60 $x/host_fp8 --backend gpu --warmup 0 --runs 1 matmul-fp8-rowwise --m $1 --n $2 --k $3 2>&1 | rows | awk -F'|' '{print $3, $4, $8}'
done
echo "-- matmul_fp8_blockwise: every kernel checked (1x128 and 128x128 block scales)"
for shape in "1 1 1" "31 33 17" "33 31 130" "130 72 256" "17 65 131" "33 515 2051" "130 1030 1100" "4096 1000 333" "128 4096 4096" "2100 4100 1000"; do
  set -- $shape
  timeout 60 $x/host_fp8 --backend gpu --warmup 0 --runs 1 matmul-fp8-blockwise --m $1 --n $2 --k $3 2>&1 | rows | awk -F'|' '{print $3, $4, $8}'
done
echo "-- matmul_fp8_rowwise_promoted: every kernel checked (row-wise scales over f32 totals)"
for shape in "1 1 1" "31 33 17" "130 72 256" "33 515 2051" "130 1030 1100" "128 4096 4096" "2100 4100 1000"; do
  set -- $shape
  timeout 60 $x/host_fp8 --backend gpu --warmup 0 --runs 1 matmul-fp8-rowwise-promoted --m $1 --n $2 --k $3 2>&1 | rows | awk -F'|' '{print $3, $4, $8}'
done
echo "-- quantize_fp8: every kernel checked (codes and scales exact) at edge and large shapes"
for shape in "1 1 1" "7 300 128" "9 1000 1000" "2 4099 4099" "33 515 128" "4096 7168 128" "8192 4096 4096" "16384 2048 128"; do
  set -- $shape
  timeout 60 $x/host_fp8 --backend gpu --warmup 0 --runs 1 quantize-fp8 --rows $1 --cols $2 --group $3 2>&1 | rows | awk -F'|' '{print $3, $4, $8}'
done
step 2
echo "-- quantize_fp8 at its bench sizes (GB/s against the device's copy)"
for shape in "8192 7168 128" "8192 4096 4096" "32768 4096 128"; do
  set -- $shape
  timeout 60 $x/host_fp8 --backend gpu --warmup 3 --runs 20 quantize-fp8 --rows $1 --cols $2 --group $3 2>&1 | rows | awk -F'|' '{print $3, $4, $5, $6, $7, $8}'
done
for shape in "8192 8192 8192" "4096 4096 4096" "2048 11008 4096" "12608 4096 1024" "128 4096 4096"; do
  set -- $shape
  timeout 90 $x/host_fp8 --backend gpu --warmup 3 --runs 20 matmul-fp8 --m $1 --n $2 --k $3 2>&1 | rows | awk -F'|' '{print $3, $4, $5, $6, $8}'
  timeout 60 $x/host_fp8 --backend gpu --warmup 0 --runs 1 matmul-fp8 --m $1 --n $2 --k $3 --variant auto 2>&1 | grep -iE "chose|why|auto" | head -2
done
for shape in "8192 8192 8192" "2048 11008 4096"; do
  set -- $shape
  timeout 90 $x/host_fp8 --backend gpu --warmup 3 --runs 20 matmul-fp8-rowwise --m $1 --n $2 --k $3 2>&1 | rows | awk -F'|' '{print $3, $4, $5, $6, $8}'
  timeout 90 $x/host_fp8 --backend gpu --warmup 3 --runs 20 matmul-fp8-blockwise --m $1 --n $2 --k $3 2>&1 | rows | awk -F'|' '{print $3, $4, $5, $6, $8}'
done
python3 -m pip install --quiet --no-deps --no-index --target /tmp/site gpud/bt/python/*.whl
PYTHONPATH=/tmp/site timeout 200 python3 docs/runs/2026-12-07-k/scaled_mm.py 8192x8192x8192 4096x4096x4096 2048x11008x4096 12608x4096x1024 128x4096x4096 512x4096x11008
(cd host/python/tests && PYTHONPATH=/tmp/site timeout 120 python3 -m unittest -k fp8 test_torch 2>&1 | tail -5)
step 3
for tool in memcheck racecheck synccheck; do
  for v in persistent clustered rowwise_persistent blockwise_persistent_128x128; do
    family=matmul-fp8; [ $v = rowwise_persistent ] && family=matmul-fp8-rowwise
    [ $v = blockwise_persistent_128x128 ] && family=matmul-fp8-blockwise
    timeout 60 compute-sanitizer --tool $tool --kernel-name kns=matmul_fp8_$v $x/host_fp8 --backend gpu --warmup 0 --runs 1 $family --m 33 --n 515 --k 2051 --variant matmul_fp8_$v > $OUT/san-$tool-$v.txt 2>&1
    echo "$tool $v rc $?: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/san-$tool-$v.txt | head -1)"
  done
done
step end
