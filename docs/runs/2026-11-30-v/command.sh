#!/usr/bin/env bash
# Run 2026-11-30-v: the command was not recorded. From its files and docs/perf-log.md (run v): the
# bundle's prep (prep.txt, environment.txt), then the scans against their twins and CUB from 2^22 to
# 2^30 (demos.txt), with the ordered scan's CUDA C twin rebuilt with a 64-tile window.
