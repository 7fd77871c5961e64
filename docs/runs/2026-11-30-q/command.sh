#!/usr/bin/env bash
# Run 2026-11-30-q: the command was not recorded. Its files are the bundle's prep output
# (environment.txt, sass.txt.gz); docs/perf-log.md (run q) adds `host histogram-f32` at 2^28 samples
# with the CUDA C twins and CUB, whose output was not kept.
