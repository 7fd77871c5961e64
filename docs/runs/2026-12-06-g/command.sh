#!/usr/bin/env bash
# Run 2026-12-06 g: issue 38, the bf16 ladders' 16-row rung reading B 16 bytes a load.
# Parts, one call each (`bash docs/runs/2026-12-06-g/command.sh 1`), carry ["gpud"]:
#   1: (host_now.gz and the bundles: this change) the GPU suite of both bf16 families and the
#      special-value tests, compute-sanitizer on the new rungs, and the 16-row rung beside the
#      persistent tiles and cuBLAS at the suite's decode shapes, 1-16 rows; the f32 16-row kernel's
#      final runs of k (run f's part 4, never timed);
#   2: (the wheel: the products' fast path to the native layer) the extension's matmul tests, the
#      host's time per call (`pieces.py`), the model-shape suite's products (every dtype)
#      against PyTorch.
#   3: (the wheel: `auto` back on the persistent tiles for the bf16 ladders at 5-16 rows, as before
#      this run; the products' fast path tested on views, empty sides and bad operands; the tensor
#      maps kept by their words in a map of 4096, the device's queued work waited for before they
#      are freed, tested with 4200 pairs of operands queued behind a busy GPU) the extension's
#      matmul tests, the suite's bf16 and bf16-f32 products. Not run: no device could be started
#      from 17:13 to the end of the session's device time.
# Bundles as in run 2026-12-06 d's command.sh.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
part=${1:-1}
exec > >(tee -a "$OUT/part-$part.txt") 2>&1
x=/tmp/r; mkdir -p $x
for side in before now; do [ -f gpud/host_$side.gz ] && { [ -x $x/host_$side ] || { gunzip -c gpud/host_$side.gz > $x/host_$side && chmod +x $x/host_$side; }; }; done
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
wheel() { [ -d /tmp/site/rust_kernels ] || python3 -m pip install --quiet --no-deps --no-index --target /tmp/site gpud/bt/python/*.whl; }
timed() { # family m n k variant...
  local f=$1 m=$2 n=$3 k=$4; shift 4
  for v in "$@"; do
    timeout 60 $x/host_now --backend gpu --warmup 3 --runs 20 $f --m $m --n $n --k $k --variant $v 2>&1 | rows | sed "s/^/$f /"
  done
}
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader; date -u
if [ "$part" = 1 ]; then
  [ -d gpud/t/tests ] || gpud/t/run.sh $OUT unpack > /dev/null
  s=$(date +%s)
  TEST_FAMILIES=matmul_bf16,matmul_bf16_rounded timeout 200 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
  echo "GPU suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-gpu.log | head
  s=$(date +%s)
  timeout 200 gpud/t/tests/host-special_values-test --include-ignored > $OUT/tests-special.log 2>&1
  echo "special values rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-special.log | head
  san() { # tool family variant m n k
    timeout 90 compute-sanitizer --tool $1 --error-exitcode 9 $x/host_now --backend gpu --warmup 0 --runs 1 $2 --variant $3 --m $4 --n $5 --k $6 >> $OUT/sanitizer.txt 2>&1
    echo "$1 $2 $3 $4x$5x$6 rc $?"
  }
  s=$(date +%s)
  for tool in memcheck racecheck synccheck initcheck; do
    san $tool matmul-bf16 small_m16 13 131 2051; san $tool matmul-bf16 small_m16 16 4096 4096
    san $tool matmul-bf16-rounded small_m16 16 520 8192; san $tool matmul-bf16-rounded small_m16 33 1001 3001
  done
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt | sort | uniq -c
  echo "sanitizers in $(( $(date +%s) - s )) s"
  for shape in "16 12288 4096" "16 11008 4096" "16 8192 8192" "16 4096 4096" "16 6144 4096" "16 4096 14336" "16 28672 4096" "16 10240 8192"; do
    set -- $shape; echo "-- m=$1 n=$2 k=$3"
    timed matmul-bf16-rounded $1 $2 $3 small_m16 persistent_128x128 auto
    timed matmul-bf16 $1 $2 $3 small_m16 persistent_128x128
  done
  for shape in "1 4096 4096" "4 4096 4096" "8 4096 4096" "12 4096 4096" "1 12288 4096" "4 12288 4096" "8 12288 4096" "12 12288 4096" "8 28672 4096"; do
    set -- $shape; echo "-- m=$1 n=$2 k=$3"
    timed matmul-bf16-rounded $1 $2 $3 small_m16 small_m8 persistent_128x64 auto
  done
  # Past 16 rows: the 16-row rung in row groups (B read again from the L2) beside the tiles.
  for shape in "32 4096 4096" "64 4096 4096" "128 768 3072" "128 2304 768" "128 3072 768" "128 4096 4096" "128 6144 4096" "64 11008 4096"; do
    set -- $shape; echo "-- m=$1 n=$2 k=$3"
    timed matmul-bf16-rounded $1 $2 $3 small_m16 auto
  done
  echo "-- f32 16-row kernel, final runs of k (run f: 8 runs 0.224 ms)"
  timed matmul 16 10240 8192 auto; timed matmul 16 28672 4096 auto; timed matmul 16 12288 4096 auto
  exit 0
fi
if [ "$part" = 2 ]; then
  wheel
  s=$(date +%s)
  PYTHONPATH=/tmp/site:gpud/bt/python timeout 240 python3 -m unittest discover -s gpud/bt/python/tests -k matmul > $OUT/unittest.log 2>&1
  echo "unittest rc $? in $(( $(date +%s) - s )) s"; grep -E "^(FAIL|ERROR):" $OUT/unittest.log | head; tail -3 $OUT/unittest.log
  PYTHONPATH=/tmp/site:gpud/bt/python timeout 120 python3 $(dirname "$0")/pieces.py
  s=$(date +%s)
  PYTHONPATH=/tmp/site:gpud/bt/python timeout 400 python3 gpud/bt/python/bench_models.py --json $OUT/torch-models.json > $OUT/models.txt 2>&1
  echo "models rc $? in $(( $(date +%s) - s )) s"; grep -E "geomean|below" $OUT/models.txt
  exit 0
fi
if [ "$part" = 3 ]; then
  wheel
  s=$(date +%s)
  PYTHONPATH=/tmp/site:gpud/bt/python timeout 100 python3 -m unittest discover -s gpud/bt/python/tests -k matmul -v > $OUT/unittest.log 2>&1
  echo "unittest rc $? in $(( $(date +%s) - s )) s"; grep -E "^(FAIL|ERROR)|\.\.\. " $OUT/unittest.log | head -20; tail -3 $OUT/unittest.log
  s=$(date +%s)
  PYTHONPATH=/tmp/site:gpud/bt/python timeout 90 python3 gpud/bt/python/bench_models.py --dtypes bf16,bf16-f32 --json $OUT/torch-models.json > $OUT/models.txt 2>&1
  echo "models rc $? in $(( $(date +%s) - s )) s"; grep -E "geomean|below" $OUT/models.txt
  exit 0
fi
