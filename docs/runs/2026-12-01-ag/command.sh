# Run ag: the PyTorch extension after change 78b (add and shared_mem_add straight to the native layer,
# which checks every argument; what it refuses goes the careful way): the tests, the operator
# benchmark and the call cost.
set -u
b=target/gpu-bundle
timeout 500 bash $b/run.sh $OUT torch > $OUT/torch-mode.txt 2>&1; echo "run.sh torch rc $?" > $OUT/run.txt
cat $OUT/run.txt; tail -30 $OUT/torch-mode.txt
python3 -c "import json; d=json.load(open('$OUT/call-cost.json'))['us']; [print(f'{v:8.2f}  {k}') for k,v in d.items()]"
