#!/usr/bin/env bash
# Run 2026-12-06 c: issue 38, perf log change 143 (TF32 on 128-row tiles where C has at most 128
# rows). Parts, one call each (`bash docs/runs/2026-12-06-c/command.sh 1`), carry ["gpud"]:
#   1: GPU suite of the TF32 ladder (the new rung on every edge shape); compute-sanitizer on the new
#      rung; before and now at 128 rows and below (the 256-row rung before, both rungs now, and
#      auto), and at two shapes of the 256-row rung alone (unchanged but for its barriers);
#   2: the extension's tests; the model-shape suite against PyTorch (bench_models, every dtype);
#   3: the host's time per call of small tensor-core products, piece by piece (pieces.py), and the
#      f32 ladder's every tile configuration beside `auto` at the suite's f32 shapes of 16–512
#      rows that lose most;
#   4: (host_now rebuilt with `autotune --models`) the f32 ladder's tile profile of this H100 at its
#      bench shapes and the suite's products past the small-m rungs; then the suite's f32 products
#      against PyTorch with that profile (KERNELS_TILE_PROFILE) and without;
#   5: (bundles rebuilt with the H100 profile carried, change 144) the TF32 ladder's GPU suite, what
#      `auto` takes for f32 at two losing shapes and why, the model-shape suite (every dtype);
#   6: data for the next choices: every bf16 and TF32 rung at GPT-2's small products (where the
#      suite runs 0.72–0.81×), and the LM head at 128 rows with n odd (50257: row-padded copies)
#      beside n = 50264 (read in place);
#   7: (host_before.gz: part 5's host; host_now.gz and the test bundle with the library's own
#      row-padding kernel, change 145) the GPU suite of pad_rows and the TMA ladders (their odd
#      edge shapes go through the copy), compute-sanitizer on odd shapes of both, the copy alone,
#      and before and now on the LM head.
# Bundles (on the dev machine; gpud/ is not in git): host_before.gz, b6b39b1's stripped release
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
  TEST_FAMILIES=matmul_tc timeout 200 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
  echo "GPU suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-gpu.log | head
  san() { # tool variant m n k
    timeout 60 compute-sanitizer --tool $1 --error-exitcode 9 $x/host_now --backend gpu --warmup 0 --runs 1 matmul-tc --variant $2 --m $3 --n $4 --k $5 >> $OUT/sanitizer.txt 2>&1
    echo "$1 $2 $3x$4x$5 rc $?"
  }
  s=$(date +%s)
  { san memcheck wgmma_128x128 100 4100 130; san racecheck wgmma_128x128 100 4100 130
    san memcheck wgmma_128x128 128 1027 515; san initcheck wgmma_128x128 128 1027 515
    san memcheck wgmma_128x128 33 2051 4097; san memcheck wgmma_128x128 257 1030 300; } > $OUT/sanitizer-rc.txt
  cat $OUT/sanitizer-rc.txt; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt | sort | uniq -c
  echo "sanitizers in $(( $(date +%s) - s )) s"
  s=$(date +%s)
  for shape in "128 28672 8192" "128 10240 8192" "128 12288 4096" "128 4096 4096" "128 8192 28672" "128 50257 768" \
               "128 2304 768" "64 28672 4096" "100 8192 8192" "17 11008 4096"; do
    set -- $shape
    echo "-- matmul-tc m=$1 n=$2 k=$3"
    for run in "before wgmma" "now wgmma" "now wgmma_128x128" "now auto" "before wgmma" "now wgmma_128x128"; do
      set -- $run $shape
      timeout 60 $x/host_$1 --backend gpu --warmup 3 --runs 20 matmul-tc --m $3 --n $4 --k $5 --variant $2 2>&1 | rows | sed "s/^/$1 /"
    done
  done > $OUT/before-now.log 2>&1
  for shape in "8192 8192 8192" "512 10240 8192"; do
    set -- $shape
    echo "-- matmul-tc m=$1 n=$2 k=$3"
    for side in before now before now; do
      timeout 60 $x/host_$side --backend gpu --warmup 3 --runs 20 matmul-tc --m $1 --n $2 --k $3 --variant wgmma 2>&1 | rows | sed "s/^/$side /"
    done
  done >> $OUT/before-now.log 2>&1
  echo "before/now in $(( $(date +%s) - s )) s"; cat $OUT/before-now.log
  exit 0
fi
site=/tmp/site
[ -d $site ] || python3 -m pip install --quiet --no-deps --no-index --target "$site" gpud/bt/python/*.whl
if [ "$part" = 2 ]; then
  s=$(date +%s)
  PYTHONPATH="$site" timeout 200 python3 -m unittest discover -s gpud/bt/python/tests > $OUT/unittest.log 2>&1
  echo "unittest rc $? in $(( $(date +%s) - s )) s"; grep -E "^(FAIL|ERROR):" $OUT/unittest.log | head; tail -3 $OUT/unittest.log
  s=$(date +%s)
  PYTHONPATH="$site" timeout 300 python3 gpud/bt/python/bench_models.py --json "$OUT/torch-models.json" > "$OUT/models.log" 2>&1
  echo "bench_models rc $? in $(( $(date +%s) - s )) s"; tail -4 "$OUT/models.log"
fi
if [ "$part" = 3 ]; then
  s=$(date +%s)
  PYTHONPATH="$site" timeout 200 python3 docs/runs/2026-12-06-c/pieces.py > $OUT/pieces.log 2>&1
  echo "pieces rc $? in $(( $(date +%s) - s )) s"; cat $OUT/pieces.log
  s=$(date +%s)
  for shape in "128 10240 8192" "512 4096 14336" "512 4096 4096" "128 11008 4096"; do
    set -- $shape
    echo "-- matmul m=$1 n=$2 k=$3"
    for variant in auto warp_tiled_64x64 warp_tiled_128x64 multistage_128x64 warp_tiled_128x128_wide warp_tiled multistage \
                   warp_tiled_128x256_wide multistage_128x256 split_k split_k_128x64 split_k_64x128; do
      timeout 60 $x/host_now --backend gpu --warmup 2 --runs 10 matmul --m $1 --n $2 --k $3 --variant $variant 2>&1 | rows | grep -v cublas
    done
    timeout 60 $x/host_now --backend gpu --warmup 2 --runs 10 matmul --m $1 --n $2 --k $3 --variant auto 2>&1 | grep -iE "auto|chose|why" | head -3
  done > $OUT/f32-tiles.log 2>&1
  echo "f32 tiles in $(( $(date +%s) - s )) s"; cat $OUT/f32-tiles.log
fi
if [ "$part" = 4 ]; then
  s=$(date +%s)
  timeout 420 $x/host_now --backend gpu --warmup 1 --runs 5 autotune --family matmul --models --out $OUT/tile-profile.json > $OUT/autotune.log 2>&1
  echo "autotune rc $? in $(( $(date +%s) - s )) s"; grep -A200 "rule/best" $OUT/autotune.log | head -100
  s=$(date +%s)
  KERNELS_TILE_PROFILE=$OUT/tile-profile.json PYTHONPATH="$site" timeout 120 python3 gpud/bt/python/bench_models.py --dtypes f32 --json "$OUT/torch-models-f32-profile.json" > "$OUT/models-f32-profile.log" 2>&1
  echo "bench_models f32 with the profile rc $? in $(( $(date +%s) - s )) s"; tail -2 "$OUT/models-f32-profile.log"
  PYTHONPATH="$site" timeout 120 python3 gpud/bt/python/bench_models.py --dtypes f32 --json "$OUT/torch-models-f32-rule.json" > "$OUT/models-f32-rule.log" 2>&1
  echo "bench_models f32 with the rule rc $?"; tail -2 "$OUT/models-f32-rule.log"
fi
if [ "$part" = 5 ]; then
  # The rebuilt wheel and tests, whatever an earlier call on this machine left.
  rm -rf $site gpud/t/tests; python3 -m pip install --quiet --no-deps --no-index --target "$site" gpud/bt/python/*.whl
  gpud/t/run.sh $OUT unpack > /dev/null
  s=$(date +%s)
  TEST_FAMILIES=matmul_tc timeout 200 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
  echo "GPU suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-gpu.log | head
  for shape in "128 10240 8192" "512 4096 14336"; do
    set -- $shape
    timeout 60 $x/host_now --backend gpu --warmup 2 --runs 10 matmul --m $1 --n $2 --k $3 --variant auto 2>&1 | grep -E "note:|^\| matmul"
  done
  s=$(date +%s)
  PYTHONPATH="$site" timeout 300 python3 gpud/bt/python/bench_models.py --json "$OUT/torch-models.json" > "$OUT/models.log" 2>&1
  echo "bench_models rc $? in $(( $(date +%s) - s )) s"; tail -3 "$OUT/models.log"
fi
if [ "$part" = 6 ]; then
  s=$(date +%s)
  for shape in "128 768 3072" "128 2304 768" "1024 2304 768" "1024 768 3072" "128 4096 4096"; do
    set -- $shape
    echo "-- matmul-bf16 m=$1 n=$2 k=$3"
    timeout 60 $x/host_now --backend gpu --warmup 3 --runs 20 matmul-bf16 --m $1 --n $2 --k $3 --variant all 2>&1 | rows
  done > $OUT/small.log 2>&1
  for shape in "128 2304 768" "128 3072 768" "128 768 3072"; do
    set -- $shape
    echo "-- matmul-tc m=$1 n=$2 k=$3"
    timeout 60 $x/host_now --backend gpu --warmup 3 --runs 20 matmul-tc --m $1 --n $2 --k $3 --variant all 2>&1 | rows
  done >> $OUT/small.log 2>&1
  for n in 50257 50264; do
    timeout 60 $x/host_now --backend gpu --warmup 3 --runs 20 matmul-bf16 --m 128 --n $n --k 768 --variant persistent 2>&1 | rows
    timeout 60 $x/host_now --backend gpu --warmup 3 --runs 20 matmul-tc --m 128 --n $n --k 768 --variant wgmma_128x128 2>&1 | rows
  done >> $OUT/small.log 2>&1
  echo "part 6 in $(( $(date +%s) - s )) s"; cat $OUT/small.log
fi

if [ "$part" = 7 ]; then
  rm -rf gpud/t/tests; gpud/t/run.sh $OUT unpack > /dev/null
  s=$(date +%s)
  TEST_FAMILIES=pad_rows,matmul_bf16,matmul_tc timeout 200 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
  echo "GPU suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-gpu.log | head
  san() { # tool family variant m n k
    timeout 60 compute-sanitizer --tool $1 --error-exitcode 9 $x/host_now --backend gpu --warmup 0 --runs 1 $2 --variant $3 --m $4 --n $5 --k $6 >> $OUT/sanitizer.txt 2>&1
    echo "$1 $2 $3 $4x$5x$6 rc $?"
  }
  { san memcheck matmul-bf16 persistent 129 1027 515; san memcheck matmul-tc wgmma_128x128 100 4101 131
    san initcheck matmul-bf16 persistent 33 2051 97; san racecheck matmul-tc wgmma 257 1027 130; } > $OUT/sanitizer-rc.txt
  cat $OUT/sanitizer-rc.txt; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt | sort | uniq -c
  for bytes in 2 4; do
    timeout 60 $x/host_now --backend gpu --warmup 3 --runs 20 pad-rows --rows 768 --cols 50257 --bytes $bytes 2>&1 | rows
  done
  for job in "matmul-bf16 persistent 128" "matmul-bf16 persistent 1024" "matmul-tc wgmma_128x128 128" "matmul-tc wgmma 1024"; do
    set -- $job
    echo "-- $1 $2 m=$3 n=50257 k=768"
    for side in before now before now; do
      timeout 60 $x/host_$side --backend gpu --warmup 3 --runs 20 $1 --m $3 --n 50257 --k 768 --variant $2 2>&1 | rows | sed "s/^/$side /"
    done
  done
fi
