#!/usr/bin/env bash
# Run 2026-11-30-m: the command was not recorded. Its files (environment.txt, sanitizer.txt,
# tests.log) are those of the bundle's run.sh in tests mode: the test executables (GPU family test
# included), then the four compute-sanitizer tools over `host smoke`.
set -u
bash target/gpu-bundle/run.sh $OUT tests
