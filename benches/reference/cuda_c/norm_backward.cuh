// kernels::norm::backward: the input gradient of layer norm (CENTERED) or RMS norm, a block per
// row, from the forward pass's mean and rstd: dx = rstd·(g − mean(g) − x̂·mean(g·x̂)), g = dy·w.
#pragma once
#include "softmax.cuh"

template <bool CENTERED>
__device__ __forceinline__ void norm_backward_row(const float* input, const float* grad_output, const float* weight,
                                                  size_t weight_len, const float* mean, const float* rstd,
                                                  float* grad_input, unsigned cols) {
    extern __shared__ float sums[];
    unsigned row = blockIdx.x, t = threadIdx.x;
    size_t base = (size_t)row * cols;
    const float *x = input + base, *dy = grad_output + base;
    float* dx = grad_input + base;
    float mu = CENTERED ? mean[row] : 0.0f, r = rstd[row];
    auto terms = [&](unsigned c, float& xh, float& g) {
        xh = __fmul_rn(x[c] - mu, r);
        g = weight_len != 0 ? __fmul_rn(dy[c], weight[c]) : dy[c];
    };
    float sum_g = 0.0f, sum_gx = 0.0f;
    for (unsigned c = t; c < cols; c += THREADS) {
        float xh, g;
        terms(c, xh, g);
        sum_g = __fadd_rn(sum_g, g);
        sum_gx = __fadd_rn(sum_gx, __fmul_rn(g, xh));
    }
    float n = (float)cols;
    float mean_g = CENTERED ? __fdiv_rn(block_sum(sums, sum_g), n) : 0.0f;
    float mean_gx = __fdiv_rn(block_sum(sums, sum_gx), n);
    for (unsigned c = t; c < cols; c += THREADS) {
        float xh, g;
        terms(c, xh, g);
        dx[c] = __fmul_rn(r, g - mean_g - __fmul_rn(xh, mean_gx));
    }
}

#define NORM_BACKWARD_PARAMETERS                                                                               \
    const float *input, size_t input_len, const float *grad_output, size_t grad_output_len, const float *weight, \
        size_t weight_len, const float *mean, size_t mean_len, const float *rstd, size_t rstd_len,             \
        float *grad_input, size_t grad_input_len, unsigned rows, unsigned cols
