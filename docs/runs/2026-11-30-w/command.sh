#!/usr/bin/env bash
# Run 2026-11-30-w: the command was not recorded. From its files and docs/perf-log.md (run w): the
# bundle's prep (prep.txt), then the scans at 2^28 and 2^30 against their twins and CUB (demos.txt),
# the ordered scan's twin held to six blocks (__launch_bounds__(256, 6), 40 registers in run.txt).
