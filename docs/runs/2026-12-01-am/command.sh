# Run am: the call cost after change 78d (add's and shared_mem_add's stream and device passed by
# position: no keyword dict on either side), timed in interleaved rounds beside the keyword call;
# the extension's tests and operator benchmark (run.sh's torch mode, a bundle built --for torch).
set -u
b=target/gpu-bundle
timeout 300 bash $b/run.sh $OUT torch > $OUT/torch-mode.txt 2>&1; echo "run.sh torch rc $?" > $OUT/run.txt
cat $OUT/run.txt; grep -E "^Ran |^OK|FAILED" $OUT/torch-mode.txt
python3 -c "import json; d=json.load(open('$OUT/call-cost.json'))['us']; [print(f'{v:8.2f}  {k}') for k,v in d.items()]"
