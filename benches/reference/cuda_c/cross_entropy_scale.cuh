#pragma once
#include "cross_entropy.cuh"

// kernels::cross_entropy::scale: block r multiplies row r of the fused pass's gradient by its loss
// gradient in place, unless that is 1 or the row's target is ignored.
template <class E>
__device__ __forceinline__ void ce_scale(const long long* targets, const float* grad_loss, size_t grad_loss_len, E* grad,
                                         unsigned cols, long long ignore_index) {
    unsigned row = blockIdx.x;
    float factor = grad_loss[grad_loss_len == 1 ? 0 : row];
    if (factor == 1.0f || targets[row] == ignore_index) return;
    E* dst = grad + (size_t)row * cols;
    map_row<THREADS>(dst, dst, cols, threadIdx.x, [&](unsigned, float g) { return g * factor; });
}
