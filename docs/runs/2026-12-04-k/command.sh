#!/usr/bin/env bash
# Run k (2026-12-04): issue 38, perf log change 113 (the persistent tensor-core rungs take C's
# tiles in bands of 2048 rows, and cut k into runs where C has fewer tiles than the GPU has places),
# part 1: speed. gpud/ (not in git): host_now.gz, this commit's stripped release `host`;
# host_before.gz, 54c1b35's (run j's); tw/, the nvcc-made PTX (CUDA 13.0.88, -O3) of the CUDA C
# twins; bt/, the extension's wheel. Each shape before and after beside cuBLAS in one process, the
# two changed rungs beside their twins, split-k (whose meeting in C was reshaped) before and after,
# then the model-shape suite through the operators against PyTorch.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
x=/tmp/k; mkdir -p $x
for side in before now; do gunzip -c gpud/host_$side.gz > $x/host_$side && chmod +x $x/host_$side; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
s=$(date +%s)
for fv in "matmul-bf16 persistent" "matmul-tc wgmma"; do
  set -- $fv
  for mnk in "8192 28672 4096" "2048 28672 4096" "8192 8192 8192" "4096 4096 4096" "16384 3072 768" \
             "512 4096 11008" "128 11008 4096" "128 4096 14336" "16 4096 11008" "16 28672 8192" "8 28672 4096"; do
    set -- $1 $2 $mnk
    echo "-- $1 $2 m=$3 n=$4 k=$5"
    for side in before now; do
      $x/host_$side --backend gpu --warmup 3 --runs 20 $1 --m $3 --n $4 --k $5 --variant $2 2>&1 | rows | sed "s/^/$side /"
    done
  done
done > $OUT/before-after.log 2>&1
echo "before/after in $(( $(date +%s) - s )) s"
for mnk in "8192 8192 8192" "16 4096 11008"; do
  set -- $mnk
  $x/host_now --backend gpu --cuda-c gpud/tw --runs 20 matmul-bf16 --m $1 --n $2 --k $3 --variant persistent 2>&1 | rows
  $x/host_now --backend gpu --cuda-c gpud/tw --runs 20 matmul-tc --m $1 --n $2 --k $3 --variant wgmma 2>&1 | rows
done > $OUT/twins.log 2>&1
for mnk in "1024 1024 1024" "8192 64 8192"; do
  set -- $mnk
  for side in before now; do
    $x/host_$side --backend gpu --warmup 3 --runs 20 matmul --m $1 --n $2 --k $3 --variant split_k 2>&1 | rows | sed "s/^/$side /"
  done
done > $OUT/split-k.log 2>&1
cat $OUT/twins.log $OUT/split-k.log
site=$(mktemp -d)
python3 -m pip install --quiet --no-deps --no-index --target "$site" gpud/bt/python/*.whl
s=$(date +%s)
PYTHONPATH="$site" timeout 300 python3 gpud/bt/python/bench_models.py --json "$OUT/torch-models.json" > "$OUT/models.log" 2>&1
echo "bench_models rc $? in $(( $(date +%s) - s )) s"; tail -4 "$OUT/models.log"
