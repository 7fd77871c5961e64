// kernels::norm::backward_fused: a block per run of rows (rows / 256 rounded up, at most 256
// blocks) writes each row's dx as norm_backward.cuh does and keeps its columns' sums of dy·x̂ and
// dy in registers (32 columns per thread, rows up to 8192), then writes them as its row of the
// partials (the weight's half, then the bias's). The weight staged in shared memory; each row's
// slots read four at a time, past the row into the next where the matrix allows.
#pragma once
#include "softmax.cuh"
#define FUSED_SLOTS 32u
#define FUSED_MAX_BLOCKS 256u

#define FUSED_GROUP 4u
#define FUSED_STAGED (FUSED_SLOTS * THREADS + FUSED_GROUP * THREADS)

// x̂, g = dy·weight and dy at column c (the weight staged in shared memory, zeros past the row).
template <bool WEIGHTED>
__device__ __forceinline__ void fused_terms(const float* x, const float* dy, const float* weights, float mean,
                                            float rstd, unsigned c, float& xh, float& g, float& dyc) {
    dyc = dy[c];
    xh = __fmul_rn(x[c] - mean, rstd);
    g = WEIGHTED ? __fmul_rn(dyc, weights[c]) : dyc;
}

template <bool CENTERED, bool WEIGHTED>
__device__ __forceinline__ void norm_backward_run_with(const float* input, size_t input_len, const float* grad_output,
                                                       const float* weights, const float* means, const float* rstds,
                                                       float* grad_input, float* partials, unsigned rows,
                                                       unsigned cols, float* sums) {
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
        // Groups of slots read together where their reach past the row stays inside the matrix.
        bool grouped = base + cols + FUSED_GROUP * THREADS <= input_len;
        float row_g = 0.0f, row_gx = 0.0f;
#pragma unroll
        for (unsigned group = 0; group < FUSED_SLOTS / FUSED_GROUP; ++group) {
            if (t + THREADS * FUSED_GROUP * group >= cols) continue;
#pragma unroll
            for (unsigned k = 0; k < FUSED_GROUP; ++k) {
                unsigned c = t + THREADS * (FUSED_GROUP * group + k);
                if (!grouped && c >= cols) continue;
                float xh, g, dyc;
                fused_terms<WEIGHTED>(x, dy, weights, mean, rstd, c, xh, g, dyc);
                bool inside = c < cols;
                row_g = __fadd_rn(row_g, inside ? g : 0.0f);
                row_gx = __fadd_rn(row_gx, inside ? __fmul_rn(g, xh) : 0.0f);
            }
        }
        float mean_g = CENTERED ? __fdiv_rn(block_sum(sums, row_g), n) : 0.0f;
        float mean_gx = __fdiv_rn(block_sum(sums, row_gx), n);
#pragma unroll
        for (unsigned group = 0; group < FUSED_SLOTS / FUSED_GROUP; ++group) {
            if (t + THREADS * FUSED_GROUP * group >= cols) continue;
#pragma unroll
            for (unsigned k = 0; k < FUSED_GROUP; ++k) {
                unsigned j = FUSED_GROUP * group + k, c = t + THREADS * j;
                if (!grouped && c >= cols) continue;
                float xh, g, dyc;
                fused_terms<WEIGHTED>(x, dy, weights, mean, rstd, c, xh, g, dyc);
                if (c < cols) dx[c] = __fmul_rn(rstd, g - mean_g - __fmul_rn(xh, mean_gx));
                sum_w[j] = __fadd_rn(sum_w[j], __fmul_rn(dyc, xh));
                sum_b[j] = __fadd_rn(sum_b[j], dyc);
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

template <bool CENTERED>
__device__ __forceinline__ void norm_backward_run(const float* input, size_t input_len, const float* grad_output,
                                                  const float* weight, size_t weight_len, const float* means,
                                                  const float* rstds, float* grad_input, float* partials,
                                                  unsigned rows, unsigned cols) {
    extern __shared__ float shared[];
    float *sums = shared, *weights = shared + WARPS;
    if (weight_len == 0) {
        norm_backward_run_with<CENTERED, false>(input, input_len, grad_output, weights, means, rstds, grad_input,
                                                partials, rows, cols, sums);
        return;
    }
    for (unsigned c = threadIdx.x; c < cols + FUSED_GROUP * THREADS; c += THREADS) weights[c] = c < cols ? weight[c] : 0.0f;
    __syncthreads();
    norm_backward_run_with<CENTERED, true>(input, input_len, grad_output, weights, means, rstds, grad_input, partials,
                                           rows, cols, sums);
}

#define FUSED_PARAMETERS                                                                                        \
    const float *input, size_t input_len, const float *grad_output, size_t grad_output_len, const float *weight, \
        size_t weight_len, const float *mean, size_t mean_len, const float *rstd, size_t rstd_len,               \
        float *grad_input, size_t grad_input_len, float *partials, size_t partials_len, unsigned rows, unsigned cols
