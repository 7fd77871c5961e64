// Pieces shared by the norm twins (kernels::norm): layer norm (CENTERED) and RMS norm over each
// row, optional weight and bias (a length of 0: none), each row's mean and rstd where their
// lengths are not 0; the square root and the division correctly rounded, as the Rust kernels.
#pragma once
#include "softmax.cuh"

struct Affine {
    const float* weight;
    size_t weight_len;
    const float* bias;
    size_t bias_len;
    float eps;

    __device__ __forceinline__ float apply(float x, float mean, float rstd, size_t c) const {
        float y = __fmul_rn(x - mean, rstd);
        if (weight_len != 0) y = __fmul_rn(y, weight[c]);
        if (bias_len != 0) y = __fadd_rn(y, bias[c]);
        return y;
    }

    template <bool CENTERED>
    __device__ __forceinline__ float rstd(float variance) const { return __fdiv_rn(1.0f, __fsqrt_rn(variance + eps)) + (CENTERED ? 0.0f : variance - variance); }
};

template <bool CENTERED>
__device__ __forceinline__ void write_statistics(float* mean, size_t mean_len, float* rstd, size_t rstd_len,
                                                 unsigned row, float m, float r) {
    if (CENTERED && mean_len != 0) mean[row] = m;
    if (rstd_len != 0) rstd[row] = r;
}

// kernels::norm::three_pass::block_row: a block per row, three reads of it.
template <bool CENTERED>
__device__ __forceinline__ void block_row(float* sums, const float* input, float* output, Affine affine, float* mean_out,
                                          size_t mean_len, float* rstd_out, size_t rstd_len, unsigned row,
                                          unsigned cols) {
    size_t base = (size_t)row * cols;
    const float* src = input + base;
    float* dst = output + base;
    unsigned t = threadIdx.x;
    float mean = 0.0f;
    if (CENTERED) {
        float sum = 0.0f;
        for (unsigned c = t; c < cols; c += THREADS) sum = __fadd_rn(sum, src[c]);
        mean = __fdiv_rn(block_sum(sums, sum), (float)cols);
    }
    float squares = 0.0f;
    for (unsigned c = t; c < cols; c += THREADS) {
        float d = src[c] - mean;
        squares = __fadd_rn(squares, __fmul_rn(d, d));
    }
    float rstd = affine.template rstd<CENTERED>(__fdiv_rn(block_sum(sums, squares), (float)cols));
    for (unsigned c = t; c < cols; c += THREADS) dst[c] = affine.apply(src[c], mean, rstd, c);
    if (t == 0) write_statistics<CENTERED>(mean_out, mean_len, rstd_out, rstd_len, row, mean, rstd);
}

#define NORM_PARAMETERS                                                                                        \
    const float *input, size_t input_len, const float *weight, size_t weight_len, const float *bias,           \
        size_t bias_len, float *output, size_t output_len, float *mean, size_t mean_len, float *rstd,         \
        size_t rstd_len, unsigned rows, unsigned cols, float eps
