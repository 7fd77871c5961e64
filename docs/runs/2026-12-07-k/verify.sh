#!/usr/bin/env bash
# Run 2026-12-07 k, second call: the fixes of the first (quantize_fp8's one NaN code; the FP8 bound
# allows products of a subnormal e4m3; the operator's choice among kinds of scales of the same
# shapes) checked on the GPU. carry ["gpud"] (host and wheel from the commit with these fixes).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
exec > >(tee -a "$OUT/verify.txt") 2>&1
x=/tmp/r3; mkdir -p $x; gunzip -c gpud/host_fp8.gz > $x/h && chmod +x $x/h
rows() { grep -E "^\| |FAILED" | grep -vE "^\| demo|^\|-" | cut -c1-200; }
for s in "1 1 1" "7 300 128" "9 1000 1000" "33 515 128" "8192 4096 4096"; do set -- $s
  $x/h --backend gpu --warmup 0 --runs 1 quantize-fp8 --rows $1 --cols $2 --group $3 2>&1 | rows
done
for fam in matmul-fp8 matmul-fp8-rowwise matmul-fp8-blockwise matmul-fp8-rowwise-promoted; do
  for s in "129 255 9" "31 33 17" "33 515 2051" "2100 4100 1000"; do set -- $s
    $x/h --backend gpu --warmup 0 --runs 1 $fam --m $1 --n $2 --k $3 2>&1 | rows
  done
done
python3 -m pip install --quiet --no-deps --no-index --target /tmp/site4 gpud/bt/python/*.whl 2>&1 | grep -v WARN
(cd host/python/tests && PYTHONPATH=/tmp/site4 timeout 150 python3 -m unittest -v -k fp8 test_torch 2>&1 | tail -12)
