set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
exec > >(tee -a "$OUT/dbg.txt") 2>&1
x=/tmp/r2; mkdir -p $x; gunzip -c gpud/host_fp8.gz > $x/h && chmod +x $x/h
$x/h --backend gpu --warmup 0 --runs 1 quantize-fp8 --rows 7 --cols 300 --group 128 2>&1 | tail -6
for fam in matmul-fp8 matmul-fp8-rowwise matmul-fp8-blockwise matmul-fp8-rowwise-promoted; do
  for s in "129 255 9" "129 255 8" "1 255 9" "129 1 9" "2 3 4"; do set -- $s
    $x/h --backend gpu --warmup 0 --runs 1 $fam --m $1 --n $2 --k $3 2>&1 | grep -E "^\| |FAILED" | grep -vE "^\| demo|^\|-" | cut -c1-230
  done
done
for s in "33 515 2051" "2100 4100 1000" "128 4096 4096"; do set -- $s
  $x/h --backend gpu --warmup 0 --runs 1 matmul-fp8-rowwise-promoted --m $1 --n $2 --k $3 2>&1 | grep -E "^\| |FAILED" | grep -vE "^\| demo|^\|-" | cut -c1-200
done
$x/h --backend gpu --warmup 3 --runs 20 matmul-fp8-rowwise-promoted --m 8192 --n 8192 --k 8192 2>&1 | grep -E "^\| |FAILED" | grep -vE "^\| demo|^\|-" | cut -c1-200
rm -rf /tmp/site3; python3 -m pip install --quiet --no-deps --no-index --target /tmp/site3 gpud/bt/python/*.whl 2>&1 | grep -v WARN
(cd host/python/tests && PYTHONPATH=/tmp/site3 timeout 150 python3 -m unittest -v -k fp8 test_torch 2>&1 | tail -30)
