#pragma once
#include "cross_entropy.cuh"

// kernels::cross_entropy::forward: a warp or a block per row, one read (running maximum and sum),
// the loss and the row's (max, ln sum) out; the last block to take a ticket adds the losses in row order and counts
// the rows. Logits of E (f32, or bf16 as its bits), widened to f32.
template <class E>
__device__ __forceinline__ void ce_forward(const E* logits, const long long* targets, float* losses, float* stats,
                                           float* total, size_t total_len, unsigned* ticket, unsigned rows,
                                           unsigned cols, long long ignore_index, unsigned mean) {
    __shared__ float maxes[WARPS], sums[WARPS];
    __shared__ unsigned last;
    unsigned t = threadIdx.x;
    bool by_warp = cols <= CE_WARP_COLS;
    unsigned row = by_warp ? blockIdx.x * WARPS + t / 32 : blockIdx.x;
    if (row < rows) {
        long long target = targets[row];
        float loss = 0.0f, row_max = 0.0f, ln_sum = 0.0f;
        if (target != ignore_index) {
            const E* x = logits + (size_t)row * cols;
            Running running = RUNNING_EMPTY;
            auto see = [&](unsigned, float v) { running = running_add(running, v); };
            Running merged;
            if (by_warp) {
                read_row<32>(x, cols, t % 32, see);
                merged = warp_running(running);
            } else {
                read_row<THREADS>(x, cols, t, see);
                merged = block_running(maxes, sums, running);
            }
            row_max = merged.max;
            ln_sum = fast_ln(merged.sum);
            float picked = in_range(target, cols) ? Element<E>::to_f32(x[target]) : __int_as_float(0x7fc00000);
            loss = (row_max - picked) + ln_sum;
        }
        if (t % (by_warp ? 32 : THREADS) == 0) {
            losses[row] = loss;
            stats[2 * row] = row_max;
            stats[2 * row + 1] = ln_sum;
        }
    }
    if (total_len == 0) return;
    total_by_last_block<THREADS, WARPS>(sums, &last, losses, targets, total, ticket, rows, ignore_index, mean);
}
