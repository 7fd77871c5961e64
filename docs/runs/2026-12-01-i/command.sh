# Run i: the extension's path against the host's bit for bit (host/tests/gpu_external.rs), the
# other external-memory tests, and one checked launch of every registered kernel (`host smoke`)
# after the Gpu's kernels moved into a shared map.
set -u
b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
mkdir -p /tmp/tt && tar xzf $b/tests.tar.gz -C /tmp/tt
timeout 200 /tmp/tt/tests/host-gpu_external-test --include-ignored --nocapture > $OUT/tests.txt 2>&1; echo "external rc $?" > $OUT/run.txt
timeout 300 $b/host --backend gpu smoke > $OUT/smoke.txt 2>&1; echo "smoke rc $?" >> $OUT/run.txt
grep -E "^test |test result" $OUT/tests.txt >> $OUT/run.txt
grep -cE "\| pass" $OUT/smoke.txt >> $OUT/run.txt; grep -E "FAIL|fail|error" $OUT/smoke.txt | head -5 >> $OUT/run.txt
cat $OUT/run.txt
