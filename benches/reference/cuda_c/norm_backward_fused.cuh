// kernels::norm::backward_fused: a block per run of rows (rows / 256 rounded up, at most 256
// blocks) writes each row's dx as norm_backward.cuh does and keeps its columns' sums of dy·x̂ and
// dy in registers (32 columns per thread, rows up to 8192), then writes them as its row of the
// partials (the weight's half, then the bias's).
#pragma once
#include "softmax.cuh"
#define FUSED_SLOTS 32u
#define FUSED_MAX_BLOCKS 256u

template <bool CENTERED>
__device__ __forceinline__ void norm_backward_run(const float* input, const float* grad_output, const float* weight,
                                                  size_t weight_len, const float* means, const float* rstds,
                                                  float* grad_input, float* partials, unsigned rows, unsigned cols) {
    extern __shared__ float sums[];
    unsigned t = threadIdx.x;
    unsigned per_block = (rows + FUSED_MAX_BLOCKS - 1) / FUSED_MAX_BLOCKS;
    unsigned blocks = (rows + per_block - 1) / per_block;
    unsigned first = blockIdx.x * per_block, last = min(first + per_block, rows);
    float n = (float)cols;
    float sum_w[FUSED_SLOTS], sum_b[FUSED_SLOTS];
#pragma unroll
    for (unsigned j = 0; j < FUSED_SLOTS; ++j) sum_w[j] = 0.0f, sum_b[j] = 0.0f;
    for (unsigned row = first; row < last; ++row) {
        size_t base = (size_t)row * cols;
        const float *x = input + base, *dy = grad_output + base;
        float* dx = grad_input + base;
        float mean = CENTERED ? means[row] : 0.0f, rstd = rstds[row];
        float row_g = 0.0f, row_gx = 0.0f;
#pragma unroll
        for (unsigned j = 0; j < FUSED_SLOTS; ++j) {
            unsigned c = t + THREADS * j;
            if (c < cols) {
                float xh = __fmul_rn(x[c] - mean, rstd);
                float g = weight_len != 0 ? __fmul_rn(dy[c], weight[c]) : dy[c];
                row_g = __fadd_rn(row_g, g);
                row_gx = __fadd_rn(row_gx, __fmul_rn(g, xh));
            }
        }
        float mean_g = CENTERED ? __fdiv_rn(block_sum(sums, row_g), n) : 0.0f;
        float mean_gx = __fdiv_rn(block_sum(sums, row_gx), n);
#pragma unroll
        for (unsigned j = 0; j < FUSED_SLOTS; ++j) {
            unsigned c = t + THREADS * j;
            if (c < cols) {
                float xh = __fmul_rn(x[c] - mean, rstd);
                float g = weight_len != 0 ? __fmul_rn(dy[c], weight[c]) : dy[c];
                dx[c] = __fmul_rn(rstd, g - mean_g - __fmul_rn(xh, mean_gx));
                sum_w[j] = __fadd_rn(sum_w[j], __fmul_rn(dy[c], xh));
                sum_b[j] = __fadd_rn(sum_b[j], dy[c]);
            }
        }
    }
    size_t at = (size_t)blockIdx.x * cols, half = (size_t)blocks * cols;
#pragma unroll
    for (unsigned j = 0; j < FUSED_SLOTS; ++j) {
        unsigned c = t + THREADS * j;
        if (c < cols) {
            partials[at + c] = sum_w[j];
            partials[half + at + c] = sum_b[j];
        }
    }
}

#define FUSED_PARAMETERS                                                                                        \
    const float *input, size_t input_len, const float *grad_output, size_t grad_output_len, const float *weight, \
        size_t weight_len, const float *mean, size_t mean_len, const float *rstd, size_t rstd_len,               \
        float *grad_input, size_t grad_input_len, float *partials, size_t partials_len, unsigned rows, unsigned cols
