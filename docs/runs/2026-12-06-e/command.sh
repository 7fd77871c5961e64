#!/usr/bin/env bash
# Run 2026-12-06 e: issue 38. Parts, one call each (`bash docs/runs/2026-12-06-e/command.sh 1`),
# carry ["gpud"]:
#   1: (56f8e36's wheel and host) which kernels each side launches per call and their GPU time at
#      the suite's losing products (kernels_per_call.py: torch.profiler), and Nsight Compute's
#      speed-of-light of ours and cuBLAS's at 512 × 4096 × 4096 bf16;
#   2: the persistent rung with and without runs of k at equal work per block, and Nsight
#      Compute's full set on it at 512 × 4096 × 4096;
#   3: (host_before.gz: 56f8e36's host; host_now.gz and the bundles with the 128×128 tiles) the GPU
#      suite of both bf16 families, compute-sanitizer on the new rungs, `host autotune --models`
#      for both families (every suite product on both tiles, beside what the prediction takes);
#   4, 5, 6: as each part's comment says.
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
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader; date -u
if [ "$part" = 1 ]; then
  wheel
  s=$(date +%s)
  PYTHONPATH=/tmp/site:gpud/bt/python timeout 300 python3 $here/kernels_per_call.py bf16,bf16-f32,f32,tf32 $OUT/kernels.json > $OUT/kernels.txt 2>&1
  echo "kernels rc $? in $(( $(date +%s) - s )) s"; cat $OUT/kernels.txt
  s=$(date +%s)
  timeout 150 ncu --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis \
    -k 'regex:matmul_bf16|nvjet|gemm|sm90' $x/host_now --backend gpu --warmup 0 --runs 1 matmul-bf16-rounded --variant persistent --m 512 --n 4096 --k 4096 > $OUT/ncu-512.txt 2>&1
  echo "ncu rc $? in $(( $(date +%s) - s )) s"
  grep -E "^  [a-z_A-Z]|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Grid Size|Registers|Achieved Occupancy|Stall|Warp Cycles" $OUT/ncu-512.txt | head -60
  exit 0
fi
if [ "$part" = 2 ]; then
  # The persistent rung with and without runs of k at equal work per block: 512 × 4096 × 4096 (64
  # tiles, two runs of 32 steps each) against 1024 × 4096 × 2048 (128 tiles of 32 steps, no runs),
  # and neighbours; f32 C and bf16 C.
  for shape in "512 4096 4096" "1024 4096 2048" "512 4096 2048" "1024 4096 4096" "256 4096 4096" "512 4096 8192" "2048 4096 1024" "128 2304 768" "128 2304 1536" "256 2304 768"; do
    set -- $shape
    echo "-- m=$1 n=$2 k=$3"
    timeout 60 $x/host_now --backend gpu --warmup 3 --runs 20 matmul-bf16 --m $1 --n $2 --k $3 --variant persistent 2>&1 | rows | sed "s/^/f32C /"
    timeout 60 $x/host_now --backend gpu --warmup 3 --runs 20 matmul-bf16-rounded --m $1 --n $2 --k $3 --variant persistent 2>&1 | rows | sed "s/^/bf16C /"
  done
  s=$(date +%s)
  timeout 200 ncu --set full -k 'regex:matmul_bf16_persistent' $x/host_now --backend gpu --warmup 0 --runs 1 matmul-bf16 --variant persistent --m 512 --n 4096 --k 4096 > $OUT/ncu-full-512.txt 2>&1
  echo "ncu rc $? in $(( $(date +%s) - s )) s"
  grep -iE "Duration|Throughput|Stall|Warp Cycles|Issue Slot|Eligible|Active Warps|Bank|Tensor|Pipe" $OUT/ncu-full-512.txt | head -80
  exit 0
fi
if [ "$part" = 3 ]; then
  [ -d gpud/t/tests ] || gpud/t/run.sh $OUT unpack > /dev/null
  s=$(date +%s)
  TEST_FAMILIES=matmul_bf16_rounded,matmul_bf16 timeout 240 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
  echo "GPU suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-gpu.log | head
  san() { # tool family variant m n k
    timeout 90 compute-sanitizer --tool $1 --error-exitcode 9 $x/host_now --backend gpu --warmup 0 --runs 1 $2 --variant $3 --m $4 --n $5 --k $6 >> $OUT/sanitizer.txt 2>&1
    echo "$1 $2 $3 $4x$5x$6 rc $?"
  }
  s=$(date +%s)
  { san memcheck matmul-bf16-rounded persistent_128x128 33 515 2051; san racecheck matmul-bf16-rounded persistent_128x128 33 515 2051
    san initcheck matmul-bf16-rounded persistent_128x128 130 1030 1100; san memcheck matmul-bf16 persistent_128x128 100 4101 130
    san racecheck matmul-bf16 persistent_128x128 2100 4100 1000; san memcheck matmul-bf16-rounded persistent_128x128 2100 4100 1000; } > $OUT/sanitizer-rc.txt
  cat $OUT/sanitizer-rc.txt; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt | sort | uniq -c
  echo "sanitizers in $(( $(date +%s) - s )) s"
  for fam in matmul_bf16_rounded matmul_bf16; do
    s=$(date +%s)
    timeout 200 $x/host_now --backend gpu --warmup 1 --runs 5 autotune --family $fam --models --out $OUT/profile-$fam.json > $OUT/autotune-$fam.txt 2> $OUT/autotune-$fam.err
    echo "autotune $fam rc $? in $(( $(date +%s) - s )) s"; grep -vE "^autotune:" $OUT/autotune-$fam.txt | tail -110
  done
  exit 0
fi
if [ "$part" = 4 ]; then
  # (host_before.gz: 56f8e36's host; host_now.gz and the wheel: the 128×128 tiles chosen by the
  # carried profile, else the prediction) the fixed cost of one launch at one tile of one step and
  # a few, each tile and cuBLAS; `auto`'s choice at the suite's losing shapes; the extension's
  # matmul tests; the model-shape suite's bf16 products against PyTorch.
  wheel
  for shape in "128 128 64" "128 256 64" "128 256 768" "128 2304 768" "512 4096 4096" "128 11008 4096" "1024 2304 768"; do
    set -- $shape
    echo "-- m=$1 n=$2 k=$3"
    for v in persistent persistent_128x128; do
      timeout 60 $x/host_now --backend gpu --warmup 5 --runs 50 matmul-bf16-rounded --m $1 --n $2 --k $3 --variant $v 2>&1 | rows
    done
    timeout 60 $x/host_now --backend gpu --warmup 5 --runs 50 matmul-bf16-rounded --m $1 --n $2 --k $3 --variant auto 2>&1 | grep -iE "auto|chose|because|profile|predicted" | head -3
  done
  s=$(date +%s)
  PYTHONPATH=/tmp/site:gpud/bt/python timeout 240 python3 -m unittest discover -s gpud/bt/python/tests -k matmul > $OUT/unittest.log 2>&1
  echo "unittest rc $?"; grep -E "^(FAIL|ERROR):" $OUT/unittest.log | head; tail -3 $OUT/unittest.log
  echo "tests in $(( $(date +%s) - s )) s"
  s=$(date +%s)
  PYTHONPATH=/tmp/site:gpud/bt/python timeout 300 python3 gpud/bt/python/bench_models.py --dtypes bf16,bf16-f32 --json $OUT/torch-models.json > $OUT/models.txt 2>&1
  echo "models rc $? in $(( $(date +%s) - s )) s"; grep -E "geomean|below" $OUT/models.txt
  exit 0
fi
if [ "$part" = 5 ]; then
  # (host_before.gz: part 4's host, the last two waves' tiles cut where the last is part-empty;
  # host_now.gz and the bundles: only the last wave's tiles cut) the GPU suite of the three
  # tensor-core families whose persistent rungs cut the last wave; before and now, alternating,
  # where the cut differs; the model-shape suite's tensor-core products against PyTorch.
  wheel
  [ -d gpud/t/tests ] || gpud/t/run.sh $OUT unpack > /dev/null
  s=$(date +%s)
  TEST_FAMILIES=matmul_tc,matmul_bf16_rounded,matmul_bf16 timeout 300 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
  echo "GPU suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-gpu.log | head
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $x/host_now --backend gpu --warmup 0 --runs 1 matmul-bf16-rounded --variant persistent --m 512 --n 10240 --k 2048 > $OUT/san.txt 2>&1
  echo "memcheck rounded 512x10240x2048 rc $?"; grep -E "SUMMARY" $OUT/san.txt
  for shape in "512 10240 8192" "512 11008 4096" "12608 768 3072" "512 28672 8192" "2048 11008 4096"; do
    set -- $shape
    echo "-- m=$1 n=$2 k=$3"
    for round in 1 2; do for side in before now; do
      timeout 60 $x/host_$side --backend gpu --warmup 3 --runs 20 matmul-bf16-rounded --m $1 --n $2 --k $3 --variant persistent 2>&1 | rows | grep -v cublas | sed "s/^/$side /"
    done; done
  done
  for shape in "10240 1024 4096" "12608 3072 768" "512 11008 4096"; do
    set -- $shape
    echo "-- tf32 m=$1 n=$2 k=$3"
    for round in 1 2; do for side in before now; do
      timeout 60 $x/host_$side --backend gpu --warmup 3 --runs 20 matmul-tc --m $1 --n $2 --k $3 --variant auto 2>&1 | rows | sed "s/^/$side /"
    done; done
  done
  s=$(date +%s)
  PYTHONPATH=/tmp/site:gpud/bt/python timeout 300 python3 gpud/bt/python/bench_models.py --dtypes tf32,bf16,bf16-f32 --json $OUT/torch-models.json > $OUT/models.txt 2>&1
  echo "models rc $? in $(( $(date +%s) - s )) s"; grep -E "geomean|below" $OUT/models.txt
  exit 0
fi
if [ "$part" = 6 ]; then
  # (host_before.gz: part 5's host; host_now.gz and the bundles with the 128×64 tiles) the GPU
  # suite of both bf16 families, compute-sanitizer on the new rungs, `host autotune --models` for
  # both (three tiles), and the suite's bf16 products with the profiles so made.
  wheel
  [ -d gpud/t/tests ] || gpud/t/run.sh $OUT unpack > /dev/null
  s=$(date +%s)
  TEST_FAMILIES=matmul_bf16_rounded,matmul_bf16 timeout 240 gpud/t/tests/host-gpu-test every_registered_kernel --include-ignored > $OUT/tests-gpu.log 2>&1
  echo "GPU suite rc $? in $(( $(date +%s) - s )) s"; grep -E "test result|FAILED|panicked" $OUT/tests-gpu.log | head
  san() { # tool family variant m n k
    timeout 90 compute-sanitizer --tool $1 --error-exitcode 9 $x/host_now --backend gpu --warmup 0 --runs 1 $2 --variant $3 --m $4 --n $5 --k $6 >> $OUT/sanitizer.txt 2>&1
    echo "$1 $2 $3 $4x$5x$6 rc $?"
  }
  { san memcheck matmul-bf16-rounded persistent_128x64 33 515 2051; san racecheck matmul-bf16-rounded persistent_128x64 33 515 2051
    san memcheck matmul-bf16 persistent_128x64 100 4101 130; san racecheck matmul-bf16 persistent_128x64 2100 4100 1000
    san memcheck matmul-bf16-rounded persistent_128x64 130 1030 1100; } > $OUT/sanitizer-rc.txt
  cat $OUT/sanitizer-rc.txt; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/sanitizer.txt | sort | uniq -c
  for fam in matmul_bf16_rounded matmul_bf16; do
    s=$(date +%s)
    timeout 240 $x/host_now --backend gpu --warmup 1 --runs 3 autotune --family $fam --models --out $OUT/profile-$fam.json > $OUT/autotune-$fam.txt 2> $OUT/autotune-$fam.err
    echo "autotune $fam rc $? in $(( $(date +%s) - s )) s"
  done
  python3 - $OUT <<'PY'
import json, sys
out = sys.argv[1]
merged = None
for fam in ("matmul_bf16_rounded", "matmul_bf16"):
    p = json.load(open(f"{out}/profile-{fam}.json"))
    merged = p if merged is None else {**merged, "shapes": merged["shapes"] + p["shapes"]}
json.dump(merged, open(f"{out}/profile-bf16.json", "w"), indent=1)
PY
  s=$(date +%s)
  KERNELS_TILE_PROFILE=$OUT/profile-bf16.json PYTHONPATH=/tmp/site:gpud/bt/python timeout 200 python3 gpud/bt/python/bench_models.py --dtypes bf16,bf16-f32 --json $OUT/torch-models.json > $OUT/models.txt 2>&1
  echo "models rc $? in $(( $(date +%s) - s )) s"; grep -E "geomean|below" $OUT/models.txt
  exit 0
fi
