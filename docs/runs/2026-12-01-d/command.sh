# Run d: the PyTorch extension (tests, benchmark with matmul_tf32 against PyTorch's TF32 `@`), and
# the four compute-sanitizer tools on matmul-tc (the TMA path and the 4-byte cp.async path).
set -u
b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
timeout 240 bash $b/run.sh $OUT/torch torch > /dev/null 2>&1; echo "torch rc $?" > $OUT/run.txt
grep -E "^Ran|^OK|FAILED|Error" $OUT/torch/torch.log | head -5 >> $OUT/run.txt
for t in memcheck racecheck synccheck initcheck; do for s in "300 520 100" "301 519 99"; do set -- $s
  echo "== $t $s" >> $OUT/san.txt
  timeout 60 compute-sanitizer --tool $t --error-exitcode 3 $b/host --backend gpu matmul-tc --m $1 --n $2 --k $3 --runs 1 --warmup 0 >> $OUT/san.txt 2>&1
  echo "$t $s rc=$?" >> $OUT/run.txt; done; done
cat $OUT/run.txt | tr "\n" ";"; echo
python3 -c "
import json; d=json.load(open('$OUT/torch/torch-ops.json'))
for c in d['ops']: print(c['op'], c['shape'], round(c['speedup'], 3), round(c['rust_rate'], 1), round(c['pytorch_rate'], 1))
" 2>&1 | head -20
grep -c "ERROR SUMMARY: 0 errors" $OUT/san.txt
