# Run ai: the call cost after change 78c (a torch.Tensor read with five calls into Python instead of
# eight; add's launch arguments inline), with the dispatcher's own call of the operator timed beside
# the wrapper's; then the extension's tests and operator benchmark (run.sh's torch mode).
set -u
b=target/gpu-bundle
timeout 500 bash $b/run.sh $OUT torch > $OUT/torch-mode.txt 2>&1; echo "run.sh torch rc $?" > $OUT/run.txt
cat $OUT/run.txt; grep -E "^Ran |^OK|FAILED|per call" $OUT/torch-mode.txt
python3 -c "import json; d=json.load(open('$OUT/call-cost.json'))['us']; [print(f'{v:8.2f}  {k}') for k,v in d.items()]"
