#!/usr/bin/env bash
# Run a (2026-12-04): issue 44's commit 751c037 on the GPU. The command itself was not recorded;
# this is what the log shows it ran: the bundle of `cargo xtask gpu-bundle --for tests` (every test
# executable, the template project's packed as `template-*`), seven of them in turn with their
# ignored (GPU) tests, each one's result line and exit status logged.
set -u
b=target/gpu-bundle
bash $b/run.sh /tmp/x unpack
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-} PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/env.txt; date >> $OUT/env.txt
for t in host-gpu-test template-stencil-check-stencil-test toolkit-check-toolkit-test host-reduce-test \
         host-gpu_external-test host-gpu_pipeline-test host-special_values-test; do
  echo "== $t"; s=$(date +%s)
  (cd $b && timeout 420 tests/$t --include-ignored 2>&1); echo "rc=$? seconds=$(( $(date +%s) - s ))"
done > $OUT/tests.log 2>&1
