#!/usr/bin/env bash
# Run 2026-11-30-s: the command was not recorded. ab.txt is an A/B in one session (clocks in its
# first line): softmax_registers, softmax_wide and histogram_f32_warp_bins against their CUDA C twins,
# the kernels before the change, the final form and a first variant (v1) loaded as twins, two rounds
# ("=== before/final/v1 round N").
