#!/usr/bin/env bash
# Run 2026-12-06 d: issue 38, perf log change 146 (bf16 C: the sums rounded in the epilogue, a
# family of its own, matmul_bf16_rounded). Parts, one call each
# (`bash docs/runs/2026-12-06-d/command.sh 1`), carry ["gpud"]:
#   1: the GPU suite of the bf16 ladders (both families, every edge and large shape) and of the
#      special values; compute-sanitizer on the new persistent and small-m rungs where runs of k
#      meet in the partial sums; `auto` of the bf16-output family against cuBLAS with bf16 C,
#      beside `auto` of the f32-output family, at the shapes where C's bytes weigh most and at
#      decoding's few rows (the first call ran the persistent rung at every shape, before the
#      small-m rungs and the partial sums' batched loads);
#   2: the extension's tests; the model-shape suite against PyTorch (bench_models, every dtype:
#      bf16 now bf16 out against `a @ b`, bf16-f32 the f32 output);
#   3: (host_before.gz: call 2's host, fence.sc where runs of k meet; host_now.gz and the test
#      bundle with fence.acq_rel) the GPU suite of the four matmul families (every rung that cuts
#      k into runs), compute-sanitizer where runs meet, and before and now where the tiles are
#      few, both output types;
#   4: (host_before.gz: call 3's host; host_now.gz and the test bundle summing only the rows inside
#      C into the partial sums) the GPU suite of the bf16-output family, compute-sanitizer where
#      few rows meet in the partials, and before and now at 16 and 128 rows; run with part 2 in
#      one call;
#   5: (host_before.gz: call 4's host; host_now.gz and both bundles rounding from 16-byte loads
#      of the partial sums) the GPU suite of the bf16-output family, compute-sanitizer of ours
#      where runs meet (cuBLAS left out: the bf16 output's own split-k reads uninitialised
#      workspace under initcheck, call 4), before and now where the tiles are cut into runs, and
#      the model-shape suite's bf16 products (both output types);
#   6: (the same builds) racecheck's hardware exception at 512 × 4096 × 4096 in part 5, taken
#      apart: memcheck of everything the demo runs, racecheck of ours alone again and of the f32
#      rung, with the hosts of call 4 (16-byte loads not yet) and call 5; `6 b`: racecheck with
#      and without the kernel filter, at 512 and 128 rows, f32 C;
#   7: (host_before.gz: call 5's host, plain 16-byte loads; host_now.gz and both bundles loading
#      the partial sums past the L1, `ld.global.cg`) the GPU suite of the bf16-output family,
#      memcheck and initcheck of ours, before and now, and the model-shape suite's bf16 products.
# Bundles (on the dev machine; gpud/ is not in git): host_before.gz, 3088a20's stripped release
# `host`; then
#   rm -rf gpud/t gpud/bt; cargo build --release -p host && strip -o /tmp/h target/release/host && gzip -c /tmp/h > gpud/host_now.gz
#   cargo xtask gpu-bundle --for tests --tests host-gpu-test,host-special_values-test --out gpud/t
#   cargo xtask wheel && cargo xtask gpu-bundle --for torch --out gpud/bt
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
part=${1:-1}
exec > >(tee -a "$OUT/part-$part.txt") 2>&1
x=/tmp/r; mkdir -p $x
for side in before now; do [ -x $x/host_$side ] || { gunzip -c gpud/host_$side.gz > $x/host_$side && chmod +x $x/host_$side; }; done
rows() { grep -E "^\| " | grep -vE "^\| demo|^\|-"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader; date -u
if [ "$part" = 1 ]; then
  [ -d gpud/t/tests ] || gpud/t/run.sh $OUT unpack > /dev/null
  s=$(date +%s)
  TEST_FAMILIES=matmul_bf16_rounded,matmul_bf16 timeout 240 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
  echo "GPU suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-gpu.log | head
  s=$(date +%s)
  timeout 200 gpud/t/tests/host-special_values-test --include-ignored > $OUT/tests-special.log 2>&1
  echo "special values rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-special.log | head
  san() { # tool variant m n k (rc 1 alone: cuBLAS's own result out of the bound, see the log)
    timeout 90 compute-sanitizer --tool $1 --error-exitcode 9 $x/host_now --backend gpu --warmup 0 --runs 1 matmul-bf16-rounded --variant $2 --m $3 --n $4 --k $5 >> $OUT/sanitizer.txt 2>&1
    echo "$1 $2 $3x$4x$5 rc $?"
  }
  s=$(date +%s)
  { san memcheck persistent 33 515 2051; san racecheck persistent 33 515 2051; san initcheck persistent 33 515 2051
    san memcheck persistent 130 1030 1100; san memcheck persistent 2100 4100 1000; san racecheck persistent 2100 4100 1000
    san memcheck persistent 100 4101 130; san memcheck small_m4 4 515 1500; san racecheck small_m4 4 515 1500
    san initcheck small_m1 1 4097 4096; san memcheck small_m8 7 260 4096; } > $OUT/sanitizer-rc.txt
  cat $OUT/sanitizer-rc.txt; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt | sort | uniq -c
  echo "sanitizers in $(( $(date +%s) - s )) s"
  s=$(date +%s)
  for shape in "12608 768 768" "12608 768 3072" "16384 2304 768" "12608 4096 1024" "4096 4096 1024" "8192 8192 8192" \
               "8192 8192 28672" "512 10240 8192" "128 4096 4096" "128 50257 768" "1024 50257 768" "1 4096 4096" "4 4096 4096" "16 4096 4096"; do
    set -- $shape
    echo "-- m=$1 n=$2 k=$3"
    timeout 60 $x/host_now --backend gpu --warmup 3 --runs 20 matmul-bf16-rounded --m $1 --n $2 --k $3 --variant auto 2>&1 | rows | sed "s/^/rounded /"
    timeout 60 $x/host_now --backend gpu --warmup 3 --runs 20 matmul-bf16 --m $1 --n $2 --k $3 --variant auto 2>&1 | rows | sed "s/^/f32-out /"
  done > $OUT/rounded.log 2>&1
  echo "timings in $(( $(date +%s) - s )) s"; cat $OUT/rounded.log
  exit 0
fi
if [ "$part" = 3 ]; then
  [ -d gpud/t/tests ] || gpud/t/run.sh $OUT unpack > /dev/null
  s=$(date +%s)
  TEST_FAMILIES=matmul,matmul_tc,matmul_bf16,matmul_bf16_rounded timeout 280 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
  echo "GPU suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-gpu.log | head
  s=$(date +%s)
  for run in "racecheck matmul-bf16-rounded persistent 128 4096 4096" "memcheck matmul-bf16 persistent 128 4096 4096" \
             "racecheck matmul split_k_64x128 128 4100 4096" "memcheck matmul-tc small_m4 3 4097 4096"; do
    set -- $run
    timeout 90 compute-sanitizer --tool $1 --error-exitcode 9 $x/host_now --backend gpu --warmup 0 --runs 1 $2 --variant $3 --m $4 --n $5 --k $6 >> $OUT/sanitizer.txt 2>&1
    echo "$run rc $?"
  done
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt | sort | uniq -c; echo "sanitizers in $(( $(date +%s) - s )) s"
  for shape in "128 4096 4096" "16 4096 4096" "128 10240 8192" "512 10240 8192" "1 4096 4096"; do
    set -- $shape
    echo "-- m=$1 n=$2 k=$3"
    for side in before now before now; do
      for family in matmul-bf16-rounded matmul-bf16; do
        timeout 60 $x/host_$side --backend gpu --warmup 3 --runs 20 $family --m $1 --n $2 --k $3 --variant auto 2>&1 | rows | grep -v cublas | sed "s/^/$side /"
      done
    done
  done > $OUT/fence.log 2>&1
  cat $OUT/fence.log
  exit 0
fi
if [ "$part" = 4 ]; then
  [ -d gpud/t/tests ] || gpud/t/run.sh $OUT unpack > /dev/null
  s=$(date +%s)
  TEST_FAMILIES=matmul_bf16_rounded timeout 120 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
  echo "GPU suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-gpu.log | head
  for run in "initcheck 16 4096 4096" "memcheck 20 515 2051" "racecheck 70 1030 3000"; do
    set -- $run
    timeout 90 compute-sanitizer --tool $1 --error-exitcode 9 $x/host_now --backend gpu --warmup 0 --runs 1 matmul-bf16-rounded --variant persistent --m $2 --n $3 --k $4 >> $OUT/sanitizer.txt 2>&1
    echo "$run rc $?"
  done
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Race reported between" $OUT/sanitizer.txt | sort | uniq -c
  for shape in "16 4096 4096" "16 28672 4096" "128 4096 4096" "128 11008 4096"; do
    set -- $shape
    echo "-- m=$1 n=$2 k=$3"
    for side in before now before now; do
      timeout 60 $x/host_$side --backend gpu --warmup 3 --runs 20 matmul-bf16-rounded --m $1 --n $2 --k $3 --variant auto 2>&1 | rows | sed "s/^/$side /"
    done
    timeout 60 $x/host_now --backend gpu --warmup 3 --runs 20 matmul-bf16 --m $1 --n $2 --k $3 --variant auto 2>&1 | rows | grep -v cublas | sed "s/^/f32-out /"
  done > $OUT/rows.log 2>&1
  cat $OUT/rows.log
  exit 0
fi
if [ "$part" = 5 ]; then
  [ -d gpud/t/tests ] || gpud/t/run.sh $OUT unpack > /dev/null
  s=$(date +%s)
  TEST_FAMILIES=matmul_bf16_rounded timeout 120 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
  echo "GPU suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-gpu.log | head
  for run in "initcheck persistent 512 4096 4096" "racecheck persistent 512 4096 4096" "initcheck persistent 16 4096 4096" "initcheck small_m4 4 4096 4096"; do
    set -- $run
    timeout 90 compute-sanitizer --tool $1 --error-exitcode 9 --kernel-name kns=matmul_bf16_rounded $x/host_now --backend gpu --warmup 0 --runs 1 matmul-bf16-rounded --variant $2 --m $3 --n $4 --k $5 >> $OUT/sanitizer.txt 2>&1
    echo "$run rc $?"
  done
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt | sort | uniq -c
  for shape in "512 4096 4096" "2048 11008 4096" "128 6144 4096" "16 4096 4096"; do
    set -- $shape
    echo "-- m=$1 n=$2 k=$3"
    for side in before now before now; do
      timeout 60 $x/host_$side --backend gpu --warmup 3 --runs 20 matmul-bf16-rounded --m $1 --n $2 --k $3 --variant auto 2>&1 | rows | grep -v cublas | sed "s/^/$side /"
    done
  done > $OUT/loads.log 2>&1
  cat $OUT/loads.log
  site=/tmp/site
  [ -d $site ] || python3 -m pip install --quiet --no-deps --no-index --target "$site" gpud/bt/python/*.whl
  s=$(date +%s)
  PYTHONPATH="$site" timeout 200 python3 gpud/bt/python/bench_models.py --dtypes bf16,bf16-f32 --json "$OUT/torch-models.json" > "$OUT/models.log" 2>&1
  echo "bench_models rc $? in $(( $(date +%s) - s )) s"; tail -3 "$OUT/models.log"
  exit 0
fi
if [ "$part" = 7 ]; then
  [ -d gpud/t/tests ] || gpud/t/run.sh $OUT unpack > /dev/null
  s=$(date +%s)
  TEST_FAMILIES=matmul_bf16_rounded timeout 120 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
  echo "GPU suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-gpu.log | head
  for run in "initcheck persistent 512 4096 4096" "memcheck persistent 2048 11008 4096" "initcheck small_m4 4 4096 4096" "memcheck small_m1 1 4099 4096"; do
    set -- $run
    timeout 90 compute-sanitizer --tool $1 --error-exitcode 9 --kernel-name kns=matmul_bf16_rounded $x/host_now --backend gpu --warmup 0 --runs 1 matmul-bf16-rounded --variant $2 --m $3 --n $4 --k $5 >> $OUT/sanitizer.txt 2>&1
    echo "$run rc $?"
  done
  grep -E "ERROR SUMMARY" $OUT/sanitizer.txt | sort | uniq -c
  for shape in "2048 11008 4096" "512 4096 4096" "128 6144 4096" "16 4096 4096" "4 4096 4096"; do
    set -- $shape
    echo "-- m=$1 n=$2 k=$3"
    for side in before now before now; do
      timeout 60 $x/host_$side --backend gpu --warmup 3 --runs 20 matmul-bf16-rounded --m $1 --n $2 --k $3 --variant auto 2>&1 | rows | grep -v cublas | sed "s/^/$side /"
    done
  done > $OUT/loads.log 2>&1
  cat $OUT/loads.log
  site=/tmp/site
  [ -d $site ] || python3 -m pip install --quiet --no-deps --no-index --target "$site" gpud/bt/python/*.whl
  s=$(date +%s)
  PYTHONPATH="$site" timeout 200 python3 gpud/bt/python/bench_models.py --dtypes bf16,bf16-f32 --json "$OUT/torch-models.json" > "$OUT/models.log" 2>&1
  echo "bench_models rc $? in $(( $(date +%s) - s )) s"; tail -2 "$OUT/models.log"
  exit 0
fi
if [ "$part" = 6 ] && [ "${2:-}" = b ]; then
  for run in "plain 512" "kns 512" "kns 128" "plain 128"; do
    set -- $run
    filter=""; [ "$1" = kns ] && filter="--kernel-name kns=matmul_bf16"
    timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 $filter $x/host_now --backend gpu --warmup 0 --runs 1 matmul-bf16 --variant persistent --m $2 --n 4096 --k 4096 > $OUT/san-$1-$2.txt 2>&1
    echo "racecheck $run rc $?"; grep -E "SUMMARY|Internal|error:|Race reported" $OUT/san-$1-$2.txt | head -4
  done
  exit 0
fi
if [ "$part" = 6 ]; then
  for run in "memcheck now matmul-bf16-rounded" "racecheck now matmul-bf16-rounded" "racecheck before matmul-bf16-rounded" \
             "racecheck now matmul-bf16" "memcheck now matmul-bf16-rounded"; do
    set -- $run
    filter=""; [ "$1" = racecheck ] && filter="--kernel-name kns=matmul_bf16"
    timeout 120 compute-sanitizer --tool $1 --error-exitcode 9 $filter $x/host_$2 --backend gpu --warmup 0 --runs 1 $3 --variant persistent --m 512 --n 4096 --k 4096 > $OUT/san-$1-$2-$3.txt 2>&1
    echo "$run rc $?"; grep -E "SUMMARY|Internal|error:|Race reported" $OUT/san-$1-$2-$3.txt | head -4
  done
  exit 0
fi
site=/tmp/site
[ -d $site ] || python3 -m pip install --quiet --no-deps --no-index --target "$site" gpud/bt/python/*.whl
if [ "$part" = 2 ]; then
  s=$(date +%s)
  PYTHONPATH="$site" timeout 240 python3 -m unittest discover -s gpud/bt/python/tests > $OUT/unittest.log 2>&1
  echo "unittest rc $? in $(( $(date +%s) - s )) s"; grep -E "^(FAIL|ERROR):" $OUT/unittest.log | head; tail -3 $OUT/unittest.log
  s=$(date +%s)
  PYTHONPATH="$site" timeout 330 python3 gpud/bt/python/bench_models.py --json "$OUT/torch-models.json" > "$OUT/models.log" 2>&1
  echo "bench_models rc $? in $(( $(date +%s) - s )) s"; tail -5 "$OUT/models.log"
fi
