# Run y: the PyTorch extension after change 75 (cumsum's look-back scans now on 8192-element
# tiles, their scratch sized by the host): its tests with the runner's PyTorch, the operator
# benchmark and the call cost (run.sh's torch mode).
set -u
b=target/gpu-bundle
timeout 400 bash $b/run.sh $OUT torch > $OUT/torch-mode.txt 2>&1; echo "run.sh torch rc $?" > $OUT/run.txt
cat $OUT/run.txt; tail -30 $OUT/torch-mode.txt
