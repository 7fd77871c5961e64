# Run n: after the refactors (one store for both accumulator layouts, the tensor-core operators'
# shared body): the GPU suite for matmul_bf16 and matmul_tc, and the extension's tests.
set -u
b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
mkdir -p /tmp/tt && tar xzf $b/tests.tar.gz -C /tmp/tt
TEST_FAMILIES=matmul_bf16,matmul_tc timeout 300 /tmp/tt/tests/host-gpu-test --include-ignored every_registered > $OUT/tests.txt 2>&1; echo "gpu-test rc $?" > $OUT/run.txt
site=/tmp/site; rm -rf $site
python3 -m pip install --quiet --no-deps --no-index --target $site $b/python/*.whl > $OUT/pip.txt 2>&1
PYTHONPATH=$site timeout 200 python3 -m unittest discover -v -s $b/python/tests > $OUT/torch.txt 2>&1; echo "torch tests rc $?" >> $OUT/run.txt
grep -E "test result" $OUT/tests.txt >> $OUT/run.txt; grep -E "^Ran|^OK|FAILED" $OUT/torch.txt >> $OUT/run.txt
cat $OUT/run.txt
