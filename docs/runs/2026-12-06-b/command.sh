#!/usr/bin/env bash
# Run 2026-12-06 b: issue 38, perf log changes 141 (the last waves streamed) and 142 (C's unaligned
# rows stored 16 bytes at a time). Parts, one call each (`bash docs/runs/2026-12-06-b/command.sh 1`),
# carry ["gpud"]:
#   1: GPU suite of the bf16 and TF32 ladders (a part-empty last wave among the large shapes, the
#      odd edge shapes through the regrouped stores); compute-sanitizer on both; before and now,
#      two processes each, on shapes that stream, that store unaligned rows, and two that do neither;
#   2: the extension's tests; the model-shape suite against PyTorch (bench_models, every dtype);
#   3: after the cost model of change 141: the GPU suite of both ladders, before and now on the
#      shapes part 1 and part 2 showed losing or gaining, then the model-shape suite.
# Bundles (on the dev machine; gpud/ is not in git): host_before.gz, 5c50c98's stripped release
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
  TEST_FAMILIES=matmul_bf16,matmul_tc timeout 240 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
  echo "GPU suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-gpu.log | head
  san() { # tool family variant m n k
    timeout 60 compute-sanitizer --tool $1 --error-exitcode 9 $x/host_now --backend gpu --warmup 0 --runs 1 $2 --variant $3 --m $4 --n $5 --k $6 >> $OUT/sanitizer.txt 2>&1
    echo "$1 $3 $4x$5x$6 rc $?"
  }
  s=$(date +%s)
  { san memcheck matmul-bf16 persistent 2100 4100 130; san racecheck matmul-bf16 persistent 2100 4100 130
    san memcheck matmul-bf16 persistent 129 1027 515; san memcheck matmul-bf16 persistent 12 1027 2051
    san initcheck matmul-bf16 persistent 129 1027 515; san memcheck matmul-bf16 wgmma 129 1027 515
    san memcheck matmul-tc wgmma 2100 4100 130; san racecheck matmul-tc wgmma 2100 4100 130; } > $OUT/sanitizer-rc.txt
  cat $OUT/sanitizer-rc.txt; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt | sort | uniq -c
  echo "sanitizers in $(( $(date +%s) - s )) s"
  s=$(date +%s)
  for job in "matmul-bf16 persistent 512 10240 8192" "matmul-bf16 persistent 512 11008 4096" "matmul-bf16 persistent 512 12288 4096" \
             "matmul-bf16 persistent 12608 768 3072" "matmul-bf16 persistent 16384 3072 768" "matmul-bf16 persistent 8192 28672 4096" \
             "matmul-bf16 persistent 8192 8192 8192" "matmul-bf16 persistent 4096 4096 4096" \
             "matmul-bf16 persistent 1024 50257 768" "matmul-bf16 persistent 128 50257 768" "matmul-bf16 persistent 4097 3073 2049" \
             "matmul-tc wgmma 512 10240 8192" "matmul-tc wgmma 2048 11008 4096" "matmul-tc wgmma 128 28672 8192" "matmul-tc wgmma 8192 8192 8192"; do
    set -- $job
    echo "-- $1 $2 m=$3 n=$4 k=$5"
    for side in before now before now; do
      timeout 60 $x/host_$side --backend gpu --warmup 3 --runs 20 $1 --m $3 --n $4 --k $5 --variant $2 2>&1 | rows | sed "s/^/$side /"
    done
  done > $OUT/before-now.log 2>&1
  echo "before/now in $(( $(date +%s) - s )) s"; cat $OUT/before-now.log
  exit 0
fi
if [ "$part" = 3 ]; then
  [ -d gpud/t/tests ] || gpud/t/run.sh $OUT unpack > /dev/null
  s=$(date +%s)
  TEST_FAMILIES=matmul_bf16,matmul_tc timeout 240 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
  echo "GPU suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-gpu.log | head
  s=$(date +%s)
  for job in "matmul-bf16 persistent 512 10240 8192" "matmul-bf16 persistent 12608 768 768" "matmul-bf16 persistent 16384 3072 768" \
             "matmul-bf16 persistent 8192 8192 28672" "matmul-bf16 persistent 8192 8192 8192" "matmul-bf16 persistent 1024 50257 768" \
             "matmul-tc wgmma 512 10240 8192"; do
    set -- $job
    echo "-- $1 $2 m=$3 n=$4 k=$5"
    for side in before now before now; do
      timeout 60 $x/host_$side --backend gpu --warmup 3 --runs 20 $1 --m $3 --n $4 --k $5 --variant $2 2>&1 | rows | sed "s/^/$side /"
    done
  done > $OUT/before-now.log 2>&1
  echo "before/now in $(( $(date +%s) - s )) s"; cat $OUT/before-now.log
fi
site=/tmp/site
[ -d $site ] || python3 -m pip install --quiet --no-deps --no-index --target "$site" gpud/bt/python/*.whl
if [ "$part" = 2 ]; then
  s=$(date +%s)
  PYTHONPATH="$site" timeout 200 python3 -m unittest discover -s gpud/bt/python/tests > $OUT/unittest.log 2>&1
  echo "unittest rc $? in $(( $(date +%s) - s )) s"; grep -E "^(FAIL|ERROR):" $OUT/unittest.log | head; tail -3 $OUT/unittest.log
  s=$(date +%s)
  PYTHONPATH="$site" timeout 360 python3 gpud/bt/python/bench_models.py --json "$OUT/torch-models.json" > "$OUT/models.log" 2>&1
  echo "bench_models rc $? in $(( $(date +%s) - s )) s"; tail -4 "$OUT/models.log"
fi
if [ "$part" = 3 ]; then
  s=$(date +%s)
  PYTHONPATH="$site" timeout 240 python3 gpud/bt/python/bench_models.py --json "$OUT/torch-models.json" > "$OUT/models.log" 2>&1
  echo "bench_models rc $? in $(( $(date +%s) - s )) s"; tail -4 "$OUT/models.log"
fi
