#!/usr/bin/env bash
# Run 2026-12-05 a, first and second calls: `bash command.sh a`, then `bash command.sh b` (the second stopped at its 600 s limit in the speeds, the CPU reference at full size taking most of it).
# The first GPU run of the kernels built in stops 52–54 without a GPU (issue 40's norms and
# cross-entropy, issue 39's decoding, grouped-query attention and backward pass): the GPU suite of every new or
# changed family, the special values on the GPU, the four compute-sanitizer tools on each new
# kernel, each family against the copy ceiling with its CUDA C twin, then the extension's tests and
# the operators against PyTorch (norms, cross-entropy, decoding, grouped heads). Bundles (on the
# dev machine):
#   cargo build --release -p host && strip -o /tmp/h target/release/host && gzip -c /tmp/h > gpud/host_now.gz
#   cargo xtask gpu-bundle --for tests --tests host-gpu-test,special_values --out gpud/t
#   cargo xtask gpu-bundle --for torch --out gpud/bt
# then `run` with carry ["gpud"] and this script as the command (about 8 minutes of device time; split it at the speeds if a call nears 10).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
x=/tmp/r; mkdir -p $x
gunzip -c gpud/host_now.gz > $x/host && chmod +x $x/host
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
part=${1:-a}  # a: suites, special values, sanitizer; b: speeds and the PyTorch operators
gpud/t/run.sh $OUT unpack
families=layer_norm,rms_norm,layer_norm_backward,rms_norm_backward,layer_norm_weight_grad,rms_norm_weight_grad
families=$families,layer_norm_residual,rms_norm_residual,layer_norm_residual_bf16,rms_norm_residual_bf16
families=$families,layer_norm_backward_fused,rms_norm_backward_fused,norm_partials_sum
families=$families,cross_entropy,cross_entropy_backward
families=$families,attention,attention_causal,attention_decode,attention_decode_causal,attention_decode_combine
families=$families,attention_backward,attention_backward_causal,attention_backward_keys,attention_backward_keys_causal
if [ "$part" = a ]; then
s=$(date +%s)
TEST_FAMILIES=$families timeout 300 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests.log 2>&1
echo "gpu suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests.log | head
timeout 120 gpud/t/tests/host-special_values-test --include-ignored > $OUT/special.log 2>&1
echo "special values rc $?"; grep -E "test result|FAILED" $OUT/special.log | head
san() { timeout 40 compute-sanitizer --tool $1 --error-exitcode 3 $x/host --backend gpu --warmup 0 --runs 1 "${@:2}" >> $OUT/sanitizer.txt 2>&1; echo "$1 ${*:2} rc $?"; }
for tool in memcheck racecheck synccheck initcheck; do
  for cmd in "layer-norm --rows 9 --cols 1000" "layer-norm --rows 3 --cols 9000" "rms-norm-backward --rows 5 --cols 4097" \
             "layer-norm-weight-grad --rows 67 --cols 1000" "rms-norm-residual-bf16 --rows 9 --cols 2048" \
             "layer-norm-residual --rows 3 --cols 16384" "cross-entropy --rows 37 --cols 1000" "cross-entropy --rows 5 --cols 50257" \
             "cross-entropy-backward --rows 37 --cols 33" "cross-entropy-backward --rows 5 --cols 50257" \
             "layer-norm-backward-fused --rows 300 --cols 1000" "norm-partials-sum --blocks 7 --cols 1000" \
             "attention-decode --kv-heads 3 --group 5 --keys 4099" "attention-decode-causal --kv-heads 2 --group 17 --keys 100" \
             "attention-decode-combine --rows 33 --splits 9 --dim 64" \
             "attention-backward --heads 2 --seq 130 --dim 128" "attention-backward-keys-causal --heads 3 --seq 97 --dim 64"; do
    san $tool $cmd
  done
done > $OUT/sanitizer-rc.txt
grep -c "rc 0" $OUT/sanitizer-rc.txt; grep -v "rc 0" $OUT/sanitizer-rc.txt | head
exit 0
fi
gpud/t/run.sh $OUT prep > /dev/null  # the CUDA C twins built with nvcc (gpud/t/cuda-c)
s=$(date +%s)
for cmd in "layer-norm" "rms-norm" "layer-norm-backward" "layer-norm-weight-grad" "rms-norm-residual-bf16" "layer-norm-residual-bf16" \
           "cross-entropy --rows 8192 --cols 50257" "cross-entropy-backward --rows 8192 --cols 50257" \
           "cross-entropy --rows 4096 --cols 128256" "cross-entropy --rows 65536 --cols 1000" \
           "layer-norm-backward-fused" "rms-norm-backward-fused" \
           "attention-decode --kv-heads 8 --group 4 --keys 4096" "attention-decode --kv-heads 8 --group 4 --keys 32768" \
           "attention-decode --kv-heads 64 --group 4 --keys 32768" "attention-decode --kv-heads 8 --group 8 --keys 131072" \
           "attention-decode-combine" "attention-backward --heads 128 --seq 4096 --dim 128" \
           "attention-backward-causal --heads 128 --seq 4096 --dim 128"; do
  $x/host --backend gpu --cuda-c gpud/t/cuda-c --warmup 3 --runs 20 $cmd 2>&1 | rows
done > $OUT/speed.log 2>&1
echo "speed in $(( $(date +%s) - s )) s"; cat $OUT/speed.log
site=$(mktemp -d)
python3 -m pip install --quiet --no-deps --no-index --target "$site" gpud/bt/python/*.whl
PYTHONPATH="$site" timeout 180 python3 -m unittest discover -s gpud/bt/python/tests > $OUT/unittest.log 2>&1
echo "unittest rc $?"; tail -3 $OUT/unittest.log
PYTHONPATH="$site" timeout 240 python3 gpud/bt/python/bench_torch.py --json "$OUT/torch-ops.json" > "$OUT/torch-ops.log" 2>&1
echo "bench_torch rc $?"; grep -E "norm|cross|decode|attention" "$OUT/torch-ops.log"
PYTHONPATH="$site" timeout 200 python3 gpud/bt/python/bench_attention.py --json "$OUT/torch-attention.json" > "$OUT/torch-attention.log" 2>&1
echo "bench_attention rc $?"; grep -E "geomean|DIFFERS" "$OUT/torch-attention.log"
