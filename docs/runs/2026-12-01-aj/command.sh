# Run aj: issue 15's third target in one run: the kernels the Python operators choose ("auto"),
# timed by the host at the operator benchmark's shapes, then the operator benchmark from Python
# (torch.utils.benchmark, PyTorch's own operation beside): from Python the factor over PyTorch is
# PyTorch's time over ours from Python; natively, PyTorch's time over the host's.
set -u
b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
h="$b/host --backend gpu"
{
$h transpose --rows 8192 --cols 8192 --variant auto --runs 50
$h transpose --rows 8191 --cols 4097 --variant auto --runs 50
$h softmax --rows 65536 --cols 1024 --variant auto --runs 50
$h conv2d --height 8192 --width 8192 --filter 5 --variant auto --runs 50
$h scan --n 268435456 --variant auto --runs 50
} > $OUT/host.txt 2>&1; echo "host rc $?"
grep -E "^\| (transpose|softmax|conv2d|scan)" $OUT/host.txt
site=/tmp/site; rm -rf $site
python3 -m pip install --quiet --no-deps --no-index --target $site $b/python/*.whl > $OUT/pip.txt 2>&1
PYTHONPATH=$site timeout 300 python3 $b/python/bench_torch.py --json $OUT/torch-ops.json > $OUT/bench_torch.txt 2>&1; echo "bench_torch rc $?"
grep -E "^(transpose|softmax|conv2d|cumsum) " $OUT/bench_torch.txt
