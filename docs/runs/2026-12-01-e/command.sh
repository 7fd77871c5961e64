# Run e: the criterion benches of the tensor-core families (matmul_tc with its new rung, matmul_bf16,
# attention, attention_causal), their CUDA C twins, PyTorch's SDPA as anchors, cuBLAS in the same
# rounds: the figures of docs/bench/tensor-cores.
set -u
b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
mkdir -p $b/cuda-c
for k in matmul_tc_tf32 matmul_bf16_pipelined matmul_bf16_wgmma matmul_bf16_specialized attention_flash attention_causal_flash; do
  nvcc -arch=sm_90a -O3 -ptx $b/cuda-c-src/$k.cu -o $b/cuda-c/$k.ptx >> $OUT/run.txt 2>&1 || echo "nvcc $k failed" >> $OUT/run.txt
done
export BENCH_FAMILIES=matmul_tc,matmul_bf16,attention,attention_causal
python3 $b/pytorch/anchors.py > $OUT/pytorch.json 2> $OUT/bench.log
echo "anchors rc $?" >> $OUT/run.txt
CUDA_C_PTX=$b/cuda-c PYTORCH_JSON=$OUT/pytorch.json BENCH_JSON=$OUT/bench.json timeout 520 $b/bench-kernels --bench >> $OUT/bench.log 2>&1
echo "bench rc $?" >> $OUT/run.txt
cat $OUT/run.txt
python3 -c "
import json; d=json.load(open('$OUT/bench.json'))
for c in d['cases']:
    if c['size'] in ('8192x8192x8192','4096x4096x4096','512x4096x128') or c['family']=='matmul_tc': print(c['family'], c['kernel'], c['source'], c['size'], round(c['rate'],1))
" | head -70
