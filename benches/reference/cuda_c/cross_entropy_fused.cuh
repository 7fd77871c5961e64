#pragma once
#include "row_on_chip.cuh"

// kernels::cross_entropy::fused: block r takes row r once, held on chip (row_on_chip.cuh), for its
// loss, (max, ln sum) and gradient (for a loss gradient of 1, divided by the count for a mean). The
// last block to take a ticket adds the losses.

// Logits and gradient of E (f32, or bf16 as its bits).
template <class E>
__device__ __forceinline__ void ce_fused(const E* logits, const long long* targets, const float* count, float* losses,
                                         float* stats, float* total, size_t total_len, unsigned* ticket, E* grad,
                                         unsigned rows, unsigned cols, long long ignore_index, unsigned mean) {
    extern __shared__ float4 staged[];  // F_STAGED rows of F_THREADS vectors, then the warps' pairs
    float* maxes = (float*)(staged + F_STAGED * F_THREADS);
    float* sums = maxes + F_WARPS;
    unsigned* last = (unsigned*)(sums + F_WARPS);
    unsigned row = blockIdx.x, t = threadIdx.x;
    const E* src = logits + (size_t)row * cols;
    E* dst = grad + (size_t)row * cols;
    long long target = targets[row];
    float loss = 0.0f, row_max = 0.0f, ln_sum = 0.0f;
    if (target == ignore_index) {
        fill_row<F_THREADS>(dst, cols, t, 0.0f);
    } else {
        float scale = !in_range(target, cols) ? __int_as_float(0x7fc00000) : mean != 0 ? __fdiv_rn(1.0f, count[0]) : 1.0f;
        unsigned hit = in_range(target, cols) ? (unsigned)target : cols;
        Running merged = row_on_chip(src, dst, cols, staged, maxes, sums, [&](Running r) {
            float mx = r.max, ls = fast_ln(r.sum);
            return [=](unsigned c, float v) {
                float p = fast_exp((v - mx) - ls);
                return (c == hit ? p - 1.0f : p) * scale;
            };
        });
        row_max = merged.max;
        ln_sum = fast_ln(merged.sum);
        float picked = in_range(target, cols) ? Element<E>::to_f32(src[target]) : __int_as_float(0x7fc00000);
        loss = (row_max - picked) + ln_sum;
    }
    if (t == 0) {
        losses[row] = loss;
        stats[2 * row] = row_max;
        stats[2 * row + 1] = ln_sum;
    }
    if (total_len == 0) return;
    total_by_last_block<F_THREADS, F_WARPS>(sums, last, losses, targets, total, ticket, rows, ignore_index, mean);
}
