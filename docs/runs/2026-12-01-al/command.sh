# Run al: after the session's last changes (auto in one place for the host and the Python
# operators; the bundle built per mode, here `cargo xtask gpu-bundle --for all --tests
# host-cli-test`, executables packed): run.sh's unpack and torch modes (the extension's tests, whose "auto" now comes from
# host::families::auto, the operator benchmark, the call cost), `--variant auto` on the host for
# the families without tiles, the CLI tests against the bundle's binaries, and run.sh refusing a
# mode whose parts the bundle lacks.
set -u
b=target/gpu-bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
bash $b/run.sh $OUT unpack || exit 2
timeout 300 bash $b/run.sh $OUT torch > $OUT/torch-mode.txt 2>&1; echo "run.sh torch rc $?" > $OUT/run.txt
{
$b/host --backend gpu softmax --rows 65536 --cols 1024 --variant auto --runs 20
$b/host --backend gpu scan --n 268435456 --variant auto --runs 20
$b/host --backend gpu matmul-bf16 --m 4096 --n 4096 --k 4096 --variant auto --runs 10
$b/host --backend gpu attention --variant auto --runs 5
} > $OUT/auto.txt 2>&1; echo "host auto rc $?" >> $OUT/run.txt
HOST_BIN=$b/host XTASK_BIN=$b/xtask timeout 120 $b/tests/host-cli-test --include-ignored > $OUT/cli.txt 2>&1; echo "cli rc $?" >> $OUT/run.txt
rm -rf /tmp/b2 && mkdir /tmp/b2 && cp $b/run.sh /tmp/b2/ && echo torch > /tmp/b2/for.txt
bash /tmp/b2/run.sh $OUT/none tests > $OUT/refused.txt 2>&1; echo "run.sh tests in a torch bundle rc $?" >> $OUT/run.txt
cat $OUT/run.txt $OUT/refused.txt; grep -E "^Ran |^OK|FAILED|per call" $OUT/torch-mode.txt
grep -E "note: --variant auto|^\| (softmax|scan|matmul|attention)" $OUT/auto.txt; grep "test result" $OUT/cli.txt
python3 -c "import json; d=json.load(open('$OUT/call-cost.json'))['us']; [print(f'{v:8.2f}  {k}') for k,v in d.items() if 'overhead' in k]"
