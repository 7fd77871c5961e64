#!/usr/bin/env bash
# Run af: the PyTorch extension first on a GPU (tests, benchmark against PyTorch), the external-
# launch and pipeline GPU tests, then thrashing (cheap CPU read), partial (with the mapped way) and
# the prefetch pipeline with its timeline.
set -u
b=target/gpu-bundle
timeout 240 bash $b/run.sh $OUT torch > $OUT/run.txt 2>&1
echo "torch rc $?" >> $OUT/run.txt
tar -xzf $b/tests.tar.gz -C $b
{
timeout 60 $b/tests/host-gpu_external-test --include-ignored
timeout 120 $b/tests/host-gpu_pipeline-test --include-ignored
} > $OUT/tests-ext.txt 2>&1
echo "ext tests rc $?" >> $OUT/run.txt
{
timeout 90 $b/host --backend gpu managed thrashing
echo "thrashing rc $?"
timeout 90 $b/host --backend gpu managed partial
echo "partial rc $?"
timeout 120 $b/host --backend gpu managed pipeline --timeline $OUT/timeline.svg
echo "pipeline rc $?"
} > $OUT/managed.txt 2>&1
grep "rc " $OUT/managed.txt >> $OUT/run.txt
