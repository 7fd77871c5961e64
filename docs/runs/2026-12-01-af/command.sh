# Run af: the PyTorch extension after change 78 (torch.Tensor taken on torch's word: no driver
# query per array; _eager without a generator), on two H200s so that the two-GPU test of a tensor
# on another device than the launch runs too: the tests, the operator benchmark and the call cost.
set -u
b=target/gpu-bundle
timeout 500 bash $b/run.sh $OUT torch > $OUT/torch-mode.txt 2>&1; echo "run.sh torch rc $?" > $OUT/run.txt
cat $OUT/run.txt; tail -30 $OUT/torch-mode.txt
python3 -c "import json; d=json.load(open('$OUT/call-cost.json'))['us']; [print(f'{v:8.2f}  {k}') for k,v in d.items()]"
