# Run ak: run aj for the two operators whose "auto" the host's --variant does not take (softmax,
# cumsum): the kernels the Python layer picks, named, timed by the host at the operator benchmark's
# shapes, then the operator benchmark from Python again in the same run.
set -u
b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
h="$b/host --backend gpu"
{
$h softmax --rows 65536 --cols 1024 --variant softmax_registers --runs 50
$h scan --n 268435456 --variant scan_look_back_ordered --runs 50
} > $OUT/host.txt 2>&1; echo "host rc $?"
grep -E "^\| (softmax|scan)" $OUT/host.txt
site=/tmp/site; rm -rf $site
python3 -m pip install --quiet --no-deps --no-index --target $site $b/python/*.whl > $OUT/pip.txt 2>&1
PYTHONPATH=$site timeout 300 python3 $b/python/bench_torch.py --json $OUT/torch-ops.json > $OUT/bench_torch.txt 2>&1; echo "bench_torch rc $?"
grep -E "^(transpose|softmax|conv2d|cumsum) " $OUT/bench_torch.txt
