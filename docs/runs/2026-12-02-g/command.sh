#!/usr/bin/env bash
# Run g (2026-12-02), commit 3692192 (FamilyDemo split, grids reading the launch's
# Occupancy, is_aligned4 compiled in the library). Bundle: `cargo xtask gpu-bundle --for check`,
# carried as target/gpu-bundle. The GPU suite with every ignored test (the project `cargo xtask new`
# writes and toolkit-check among them) and the four compute-sanitizer tools over `host smoke`.
set -o pipefail; bash target/gpu-bundle/run.sh $OUT tests 2>&1 | tail -70
