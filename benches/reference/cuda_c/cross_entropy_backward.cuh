#pragma once
#include "cross_entropy.cuh"

// kernels::cross_entropy::backward: the logits' gradient (e^((x − max) − ln sum) − [c = target])·s, a warp
// or a block per row, one read and one write; ignored rows written 0 without a read.
template <class E>
__device__ __forceinline__ void ce_backward(const E* logits, const long long* targets, const float* stats,
                                            const float* grad_loss, size_t grad_loss_len, const float* count,
                                            size_t count_len, E* grad_logits, unsigned rows, unsigned cols,
                                            long long ignore_index) {
    unsigned t = threadIdx.x;
    bool by_warp = cols <= CE_WARP_COLS;
    unsigned row = by_warp ? blockIdx.x * WARPS + t / 32 : blockIdx.x;
    if (row >= rows) return;
    size_t base = (size_t)row * cols;
    E* dst = grad_logits + base;
    long long target = targets[row];
    if (target == ignore_index) {
        if (by_warp)
            fill_row<32>(dst, cols, t % 32, 0.0f);
        else
            fill_row<THREADS>(dst, cols, t, 0.0f);
        return;
    }
    bool valid = in_range(target, cols);
    float scale = grad_loss[grad_loss_len == 1 ? 0 : row];
    if (count_len != 0) scale = __fdiv_rn(scale, count[0]);
    if (!valid) scale = __int_as_float(0x7fc00000);
    float row_max = stats[2 * row], ln_sum = stats[2 * row + 1];
    unsigned hit = valid ? (unsigned)target : cols;
    auto f = [&](unsigned c, float x) {
        float p = fast_exp((x - row_max) - ln_sum);
        return __fmul_rn(c == hit ? p - 1.0f : p, scale);
    };
    if (by_warp)
        map_row<32>(logits + base, dst, cols, t % 32, f);
    else
        map_row<THREADS>(logits + base, dst, cols, t, f);
}
