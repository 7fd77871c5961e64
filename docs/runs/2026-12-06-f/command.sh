#!/usr/bin/env bash
# Run 2026-12-06 f: issue 38, the f32 ladder's 16-row rung and split-k on the multistage tiles.
# Parts, one call each (`bash docs/runs/2026-12-06-f/command.sh 1`), carry ["gpud"]:
#   1: (host_before.gz: 4d3a6ff's host; host_now.gz and the bundles: this change) the GPU suite of
#      the f32 ladder and the special-value tests, compute-sanitizer on the new kernels, and each
#      new kernel beside what it replaces at the suite's losing f32 products (cuBLAS in the same
#      process);
#   2: `host autotune --family matmul --models` with the two new split-k configurations;
#   3: (host_now.gz and the bundles: part 2's profile carried, the 16-row kernel's runs of k cut to
#      fill its waves and `auto` taking it to 32 rows) the 16-row products before and now, the
#      GPU suite of the f32 ladder, the model-shape suite's f32 products against PyTorch (the
#      only ones this change moves);
#   4: (host_before.gz: part 3's host; host_now.gz and the bundles: runs of k chosen with a block's
#      fixed cost counted, `auto` taking the 16-row kernel to 16 rows again) as part 3, before and
#      now alternating.
# Bundles as in run 2026-12-06 d's command.sh.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
part=${1:-1}
here=$(dirname "$0")
exec > >(tee -a "$OUT/part-$part.txt") 2>&1
x=/tmp/r; mkdir -p $x
for side in before now; do [ -f gpud/host_$side.gz ] && { [ -x $x/host_$side ] || { gunzip -c gpud/host_$side.gz > $x/host_$side && chmod +x $x/host_$side; }; }; done
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
wheel() { [ -d /tmp/site/rust_kernels ] || python3 -m pip install --quiet --no-deps --no-index --target /tmp/site gpud/bt/python/*.whl; }
time_f32() { # host m n k variant...
  local h=$1 m=$2 n=$3 k=$4; shift 4
  for v in "$@"; do
    timeout 60 $x/host_$h --backend gpu --warmup 3 --runs 20 matmul --m $m --n $n --k $k --variant $v 2>&1 | rows | sed "s/^/$h /"
  done
}
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader; date -u
if [ "$part" = 1 ]; then
  [ -d gpud/t/tests ] || gpud/t/run.sh $OUT unpack > /dev/null
  s=$(date +%s)
  TEST_FAMILIES=matmul timeout 200 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
  echo "GPU suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-gpu.log | head
  s=$(date +%s)
  timeout 200 gpud/t/tests/host-special_values-test --include-ignored > $OUT/tests-special.log 2>&1
  echo "special values rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-special.log | head
  san() { # tool variant m n k
    timeout 90 compute-sanitizer --tool $1 --error-exitcode 9 $x/host_now --backend gpu --warmup 0 --runs 1 matmul --variant $2 --m $3 --n $4 --k $5 >> $OUT/sanitizer.txt 2>&1
    echo "$1 $2 $3x$4x$5 rc $?"
  }
  s=$(date +%s)
  for tool in memcheck racecheck synccheck initcheck; do
    san $tool small_m16 13 131 2051; san $tool split_k_multistage 130 67 1031; san $tool split_k_multistage_128x64 200 1000 5000
  done
  san memcheck small_m16 33 4100 9000
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt | sort | uniq -c
  echo "sanitizers in $(( $(date +%s) - s )) s"
  for shape in "16 10240 8192" "16 28672 4096" "16 12288 4096" "16 4096 4096" "16 8192 28672" "16 4096 14336" "9 4096 4096" "12 6144 4096"; do
    set -- $shape; echo "-- m=$1 n=$2 k=$3"
    time_f32 now $1 $2 $3 small_m16 small_m8
  done
  for shape in "24 4096 4096" "32 4096 4096" "48 4096 4096" "64 4096 4096" "32 11008 4096" "64 11008 4096"; do
    set -- $shape; echo "-- m=$1 n=$2 k=$3"
    time_f32 now $1 $2 $3 small_m16 auto
  done
  for shape in "128 4096 4096" "128 8192 8192" "128 10240 8192" "128 768 3072" "128 3072 768" "128 2304 768" "512 11008 4096" "512 10240 8192" "1024 2304 768"; do
    set -- $shape; echo "-- m=$1 n=$2 k=$3"
    time_f32 now $1 $2 $3 split_k_multistage split_k_multistage_128x64 auto
  done
  exit 0
fi
if [ "$part" = 2 ]; then
  s=$(date +%s)
  timeout 560 $x/host_now --backend gpu --warmup 1 --runs 5 autotune --family matmul --models --out $OUT/profile-matmul.json > $OUT/autotune-matmul.txt 2> $OUT/autotune-matmul.err
  echo "autotune matmul rc $? in $(( $(date +%s) - s )) s"; grep -vE "^autotune:" $OUT/autotune-matmul.txt | grep -E "^\| matmul " | tail -110
  exit 0
fi
if [ "$part" = 4 ]; then
  wheel
  [ -d gpud/t/tests ] || gpud/t/run.sh $OUT unpack > /dev/null
  s=$(date +%s)
  TEST_FAMILIES=matmul timeout 200 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
  echo "GPU suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-gpu.log | head
  for shape in "16 10240 8192" "16 28672 4096" "16 12288 4096" "16 28672 8192" "24 4096 4096" "32 11008 4096"; do
    set -- $shape; echo "-- m=$1 n=$2 k=$3"
    for round in 1 2; do time_f32 before $1 $2 $3 auto; time_f32 now $1 $2 $3 auto; done | grep -v cublas
    time_f32 now $1 $2 $3 auto | grep cublas
  done
  s=$(date +%s)
  PYTHONPATH=/tmp/site:gpud/bt/python timeout 300 python3 gpud/bt/python/bench_models.py --dtypes f32 --json $OUT/torch-models.json > $OUT/models.txt 2>&1
  echo "models rc $? in $(( $(date +%s) - s )) s"; grep -E "geomean|below" $OUT/models.txt
  exit 0
fi
if [ "$part" = 3 ]; then
  wheel
  [ -d gpud/t/tests ] || gpud/t/run.sh $OUT unpack > /dev/null
  s=$(date +%s)
  TEST_FAMILIES=matmul timeout 200 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
  echo "GPU suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-gpu.log | head
  timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $x/host_now --backend gpu --warmup 0 --runs 1 matmul --variant small_m16 --m 31 --n 10240 --k 8191 > $OUT/san.txt 2>&1
  echo "memcheck small_m16 31x10240x8191 rc $?"; grep -E "SUMMARY" $OUT/san.txt
  for shape in "16 10240 8192" "16 28672 4096" "16 12288 4096" "16 8192 28672" "16 6144 4096" "24 4096 4096" "32 11008 4096"; do
    set -- $shape; echo "-- m=$1 n=$2 k=$3"
    time_f32 before $1 $2 $3 auto; time_f32 now $1 $2 $3 auto
  done
  s=$(date +%s)
  PYTHONPATH=/tmp/site:gpud/bt/python timeout 300 python3 gpud/bt/python/bench_models.py --dtypes f32 --json $OUT/torch-models.json > $OUT/models.txt 2>&1
  echo "models rc $? in $(( $(date +%s) - s )) s"; grep -E "geomean|below" $OUT/models.txt
  exit 0
fi
