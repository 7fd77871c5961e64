#!/usr/bin/env bash
# Run j, part 5: speed of this commit (the one-row kernels added, `auto`'s bounds per ladder: f32
# up to 16 rows, TF32 8, bf16 4). `host models` on the decode products against cuBLAS; m = 1 and 4
# at 4096 × 4096 and 28672 × 4096, each small-m kernel beside its twin; then the operators against
# PyTorch on the decode products (gpud/bt: `cargo xtask gpu-bundle --for torch`, this commit's wheel).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
x=/tmp/j; mkdir -p $x
gunzip -c gpud/host_now.gz > $x/host_now && chmod +x $x/host_now
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
for dtype in f32 tf32 bf16; do
  s=$(date +%s)
  timeout 100 $x/host_now --backend gpu --warmup 2 --runs 10 models --dtypes $dtype --tokens 1,16 \
    --json-out $OUT/models-$dtype.json > $OUT/models-$dtype.log 2>&1
  echo "models $dtype rc $? in $(( $(date +%s) - s )) s"; tail -1 $OUT/models-$dtype.log
done
for nk in "4096 4096" "28672 4096"; do
  n=${nk% *}; k=${nk#* }
  for m in 1 4; do
    for family in matmul matmul-tc matmul-bf16; do
      echo "-- $family m=$m n=$n k=$k"
      for v in small_m1 small_m4; do
        [ $m -gt 1 ] && [ $v = small_m1 ] && continue
        $x/host_now --backend gpu --cuda-c gpud/tw --warmup 2 --runs 20 $family --m $m --n $n --k $k --variant $v 2>&1 | rows
      done
    done
  done
done > $OUT/sweep.log 2>&1
site=$(mktemp -d)
python3 -m pip install --quiet --no-deps --no-index --target "$site" gpud/bt/python/*.whl
python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
s=$(date +%s)
PYTHONPATH="$site" timeout 240 python3 gpud/bt/python/bench_models.py --tokens 1,16 --json "$OUT/torch-models-decode.json" > "$OUT/torch-models.log" 2>&1
echo "bench_models rc $? in $(( $(date +%s) - s )) s"; tail -8 "$OUT/torch-models.log"
