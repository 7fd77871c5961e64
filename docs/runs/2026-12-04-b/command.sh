#!/usr/bin/env bash
# Run b (2026-12-04): change 106 (the reduce family on views) against the build before it. The
# command itself was not recorded; this is what the logs show it ran. host_before and host_after
# are the stripped release `host` of 62052e0 and 751c037; twins_before and twins_after the
# nvcc-made PTX of the reduce twins before and after they took (pointer, length) pairs.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
g=gpuab
for tool in memcheck racecheck synccheck initcheck; do
  echo "== $tool"; compute-sanitizer --tool $tool $g/host_after --backend gpu smoke 2>&1
done > $OUT/sanitizer.txt
{
  date
  for round in 1 2; do
    for side in before after; do
      for n in 268435456 16777216; do
        echo "== round $round $side reduce n=$n"
        $g/host_$side --backend gpu --cuda-c $g/twins_$side --runs 50 reduce --n $n 2>&1
        echo "== round $round $side reduce-max n=$n"
        $g/host_$side --backend gpu --runs 50 reduce-max --n $n 2>&1
      done
    done
  done
} > $OUT/ab.log
