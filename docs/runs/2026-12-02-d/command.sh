#!/usr/bin/env bash
# Run d (2026-12-02): the toolkit split (ptxkit, ptxkit-build, ptxkit-runtime; the library and host
# as their consumers). Bundle: `cargo xtask gpu-bundle --for check` at that commit, carried as
# target/gpu-bundle. The GPU suite with every ignored test (the project `cargo xtask new` writes,
# built outside the workspace, and toolkit-check among them) and the four compute-sanitizer tools
# over `host smoke`.
set -o pipefail; bash target/gpu-bundle/run.sh $OUT tests 2>&1 | tail -60
