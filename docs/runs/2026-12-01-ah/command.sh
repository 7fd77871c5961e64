# Run ah: the call cost again, measured in interleaved rounds (run ag's host ran 15-20 % slower
# than af's on every piece, torch's own included, so the runs cannot be compared piece by piece),
# with the careful way (checks in Python first, as before change 78b) timed in the same rounds.
# Then the extension's tests and operator benchmark as in run.sh's torch mode.
set -u
b=target/gpu-bundle
timeout 500 bash $b/run.sh $OUT torch > $OUT/torch-mode.txt 2>&1; echo "run.sh torch rc $?" > $OUT/run.txt
cat $OUT/run.txt; grep -E "^Ran |^OK|FAILED|per call" $OUT/torch-mode.txt
python3 -c "import json; d=json.load(open('$OUT/call-cost.json'))['us']; [print(f'{v:8.2f}  {k}') for k,v in d.items()]"
