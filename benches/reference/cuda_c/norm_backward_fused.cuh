// kernels::norm::backward_fused: a block of 512 threads per run of rows (rows / 256 rounded up, at
// most 256 blocks) writes each row's dx as norm_backward.cuh does and keeps its columns' sums of
// dy·x̂ and dy in shared memory (each thread its own columns), then writes them as its row of the
// partials (the weight's half, then the bias's). Each thread holds its S columns of x and dy in
// registers (S = cols / 512 rounded up, a constant in each body), every load of a row issued before
// any use; past 12 slots x is read again after the row's sums. The row's two sums in one barrier,
// alternate rows using alternate halves of the warp sums. The weight staged in shared memory.
// nvcc spills 8 bytes in the bodies of 9 to 12 slots (rows of 4097 to 6144 columns; the Rust
// kernel none); the benchmark's 4096 columns take the 8-slot body.
#pragma once
#define FUSED_THREADS 512u
#define FUSED_WARPS (FUSED_THREADS / 32u)
#define FUSED_SLOTS 16u
#define FUSED_COLS (FUSED_THREADS * FUSED_SLOTS)
#define FUSED_HELD_SLOTS 12u
#define FUSED_MAX_BLOCKS 256u

// The sums of a and b over the block through half `half` of warp_sums (4 · FUSED_WARPS floats).
__device__ __forceinline__ void fused_sum_pair(float* warp_sums, unsigned half, float& a, float& b) {
#pragma unroll
    for (unsigned mask = 16; mask > 0; mask /= 2) {
        a = __fadd_rn(a, __shfl_xor_sync(0xffffffffu, a, mask));
        b = __fadd_rn(b, __shfl_xor_sync(0xffffffffu, b, mask));
    }
    unsigned t = threadIdx.x, at = 2 * FUSED_WARPS * half;
    if (t % 32u == 0) {
        warp_sums[at + t / 32u] = a;
        warp_sums[at + FUSED_WARPS + t / 32u] = b;
    }
    __syncthreads();
    float all_a = 0.0f, all_b = 0.0f;
#pragma unroll
    for (unsigned w = 0; w < FUSED_WARPS; ++w) {
        all_a = __fadd_rn(all_a, warp_sums[at + w]);
        all_b = __fadd_rn(all_b, warp_sums[at + FUSED_WARPS + w]);
    }
    a = all_a;
    b = all_b;
}

template <bool CENTERED, bool WEIGHTED, unsigned S>
__device__ __forceinline__ void norm_backward_slots(const float* input, const float* grad_output,
                                                    const float* weights, const float* means, const float* rstds,
                                                    float* grad_input, float* partials, unsigned rows,
                                                    unsigned cols, float* warp_sums, float* column_sums) {
    unsigned t = threadIdx.x;
    unsigned per_block = (rows + FUSED_MAX_BLOCKS - 1) / FUSED_MAX_BLOCKS;
    unsigned blocks = (rows + per_block - 1) / per_block;
    unsigned first = blockIdx.x * per_block, last = min(first + per_block, rows);
    float n = (float)cols;
    bool last_inside = t + FUSED_THREADS * (S - 1) < cols;
#define FUSED_INSIDE(j) ((j) + 1 < S || last_inside)
#pragma unroll
    for (unsigned j = 0; j < S; ++j) {
        column_sums[t + FUSED_THREADS * j] = 0.0f;
        column_sums[FUSED_COLS + t + FUSED_THREADS * j] = 0.0f;
    }
    unsigned half = 0;
    for (unsigned row = first; row < last; ++row) {
        size_t base = (size_t)row * cols;
        const float *x = input + base, *dy = grad_output + base;
        float* dx = grad_input + base;
        float mean = CENTERED ? means[row] : 0.0f, rstd = rstds[row];
        float xs[S], dys[S];
#pragma unroll
        for (unsigned j = 0; j < S; ++j) {
            xs[j] = 0.0f, dys[j] = 0.0f;
            if (FUSED_INSIDE(j)) xs[j] = x[t + FUSED_THREADS * j], dys[j] = dy[t + FUSED_THREADS * j];
        }
        float row_g = 0.0f, row_gx = 0.0f;
#pragma unroll
        for (unsigned j = 0; j < S; ++j) {
            if (!FUSED_INSIDE(j)) continue;
            float xh = __fmul_rn(xs[j] - mean, rstd);
            float g = WEIGHTED ? __fmul_rn(dys[j], weights[t + FUSED_THREADS * j]) : dys[j];
            row_g = __fadd_rn(row_g, g);
            row_gx = __fadd_rn(row_gx, __fmul_rn(g, xh));
        }
        fused_sum_pair(warp_sums, half, row_g, row_gx);
        float mean_g = CENTERED ? __fdiv_rn(row_g, n) : 0.0f;
        float mean_gx = __fdiv_rn(row_gx, n);
        // The statistics read again past the barrier, so that x̂ is computed again rather than held
        // across it beside x and dy (as the Rust kernel does).
        mean = CENTERED ? means[row] : 0.0f, rstd = rstds[row];
        if (S > FUSED_HELD_SLOTS) {
#pragma unroll
            for (unsigned j = 0; j < S; ++j)
                if (FUSED_INSIDE(j)) xs[j] = x[t + FUSED_THREADS * j];
        }
#pragma unroll
        for (unsigned j = 0; j < S; ++j) {
            if (!FUSED_INSIDE(j)) continue;
            unsigned c = t + FUSED_THREADS * j;
            float xh = __fmul_rn(xs[j] - mean, rstd);
            float g = WEIGHTED ? __fmul_rn(dys[j], weights[c]) : dys[j];
            dx[c] = __fmul_rn(rstd, g - mean_g - __fmul_rn(xh, mean_gx));
            column_sums[c] = __fadd_rn(column_sums[c], __fmul_rn(dys[j], xh));
            column_sums[FUSED_COLS + c] = __fadd_rn(column_sums[FUSED_COLS + c], dys[j]);
        }
        half ^= 1;
    }
    size_t at = (size_t)blockIdx.x * cols, other = (size_t)blocks * cols;
#pragma unroll
    for (unsigned j = 0; j < S; ++j) {
        if (!FUSED_INSIDE(j)) continue;
        unsigned c = t + FUSED_THREADS * j;
        partials[at + c] = column_sums[c];
        partials[other + at + c] = column_sums[FUSED_COLS + c];
    }
#undef FUSED_INSIDE
}

template <bool CENTERED, bool WEIGHTED>
__device__ __forceinline__ void norm_backward_run_with(const float* input, const float* grad_output,
                                                       const float* weights, const float* means, const float* rstds,
                                                       float* grad_input, float* partials, unsigned rows,
                                                       unsigned cols, float* warp_sums, float* column_sums) {
    switch ((cols + FUSED_THREADS - 1) / FUSED_THREADS) {
#define FUSED_CASE(s)                                                                                              \
    case s:                                                                                                        \
        norm_backward_slots<CENTERED, WEIGHTED, s>(input, grad_output, weights, means, rstds, grad_input, partials, \
                                                   rows, cols, warp_sums, column_sums);                           \
        break;
        FUSED_CASE(1) FUSED_CASE(2) FUSED_CASE(3) FUSED_CASE(4) FUSED_CASE(5) FUSED_CASE(6) FUSED_CASE(7)
        FUSED_CASE(8) FUSED_CASE(9) FUSED_CASE(10) FUSED_CASE(11) FUSED_CASE(12) FUSED_CASE(13) FUSED_CASE(14)
        FUSED_CASE(15) FUSED_CASE(16)
#undef FUSED_CASE
    }
}

template <bool CENTERED>
__device__ __forceinline__ void norm_backward_run(const float* input, const float* grad_output, const float* weight,
                                                  size_t weight_len, const float* means, const float* rstds,
                                                  float* grad_input, float* partials, unsigned rows, unsigned cols) {
    extern __shared__ float shared[];
    float *warp_sums = shared, *weights = shared + 4 * FUSED_WARPS, *column_sums = weights + FUSED_COLS;
    if (weight_len == 0) {
        norm_backward_run_with<CENTERED, false>(input, grad_output, weights, means, rstds, grad_input, partials, rows,
                                                cols, warp_sums, column_sums);
        return;
    }
    for (unsigned c = threadIdx.x; c < cols; c += FUSED_THREADS) weights[c] = weight[c];
    __syncthreads();
    norm_backward_run_with<CENTERED, true>(input, grad_output, weights, means, rstds, grad_input, partials, rows, cols,
                                           warp_sums, column_sums);
}

#define FUSED_PARAMETERS                                                                                        \
    const float *input, size_t input_len, const float *grad_output, size_t grad_output_len, const float *weight, \
        size_t weight_len, const float *mean, size_t mean_len, const float *rstd, size_t rstd_len,               \
        float *grad_input, size_t grad_input_len, float *partials, size_t partials_len, unsigned rows, unsigned cols
