// kernels::norm::registers: the row in registers, a warp per row up to 1024 columns, a block per
// row up to 8192, the three passes beyond.
#pragma once
#include "norm.cuh"
#define VECTORS 8u
#define SLOTS (4u * VECTORS)
#define WARP_COLS (32u * SLOTS)
#define BLOCK_COLS (THREADS * SLOTS)

__device__ __forceinline__ float warp_sum(float s) {
    for (unsigned mask = 16; mask > 0; mask /= 2) s = __fadd_rn(s, __shfl_xor_sync(0xffffffffu, s, mask));
    return s;
}

// Slot (j, k) of member `me` of a `group`: column 4·(me + group·j) + k (VECTOR) or
// me + group·(4j + k); slots past the row hold 0 and stay out of the sums.
template <bool CENTERED, bool VECTOR, unsigned GROUP, class SumOf>
__device__ __forceinline__ void row_in_registers(const float* src, float* dst, Affine affine, unsigned cols,
                                                 unsigned me, SumOf sum_of, float& mean_out, float& rstd_out) {
    auto column = [&](unsigned j, unsigned k) { return VECTOR ? 4 * (me + GROUP * j) + k : me + GROUP * (4 * j + k); };
    float x[VECTORS][4];
#pragma unroll
    for (unsigned j = 0; j < VECTORS; ++j) {
        if (VECTOR) {
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (column(j, 0) < cols) v = *reinterpret_cast<const float4*>(src + column(j, 0));
            x[j][0] = v.x, x[j][1] = v.y, x[j][2] = v.z, x[j][3] = v.w;
        } else {
#pragma unroll
            for (unsigned k = 0; k < 4; ++k) x[j][k] = column(j, k) < cols ? src[column(j, k)] : 0.0f;
        }
    }
    float mean = 0.0f;
    if (CENTERED) {
        float sum = 0.0f;
#pragma unroll
        for (unsigned j = 0; j < VECTORS; ++j)
#pragma unroll
            for (unsigned k = 0; k < 4; ++k) sum = __fadd_rn(sum, x[j][k]);
        mean = __fdiv_rn(sum_of(sum), (float)cols);
    }
    float squares = 0.0f;
#pragma unroll
    for (unsigned j = 0; j < VECTORS; ++j)
#pragma unroll
        for (unsigned k = 0; k < 4; ++k)
            if (column(j, k) < cols) {
                float d = x[j][k] - mean;
                squares = __fadd_rn(squares, __fmul_rn(d, d));
            }
    float rstd = affine.template rstd<CENTERED>(__fdiv_rn(sum_of(squares), (float)cols));
#pragma unroll
    for (unsigned j = 0; j < VECTORS; ++j) {
        if (VECTOR) {
            unsigned c = column(j, 0);
            if (c < cols) {
                float4 y = make_float4(affine.apply(x[j][0], mean, rstd, c), affine.apply(x[j][1], mean, rstd, c + 1),
                                       affine.apply(x[j][2], mean, rstd, c + 2), affine.apply(x[j][3], mean, rstd, c + 3));
                *reinterpret_cast<float4*>(dst + c) = y;
            }
        } else {
#pragma unroll
            for (unsigned k = 0; k < 4; ++k)
                if (column(j, k) < cols) dst[column(j, k)] = affine.apply(x[j][k], mean, rstd, column(j, k));
        }
    }
    mean_out = mean, rstd_out = rstd;
}

__device__ __forceinline__ bool aligned16(const void* p) { return reinterpret_cast<size_t>(p) % 16 == 0; }

template <bool CENTERED>
__device__ __forceinline__ void normalise(const float* input, float* output, Affine affine, float* mean_out,
                                          size_t mean_len, float* rstd_out, size_t rstd_len, unsigned rows,
                                          unsigned cols) {
    extern __shared__ float sums[];
    unsigned t = threadIdx.x;
    bool vector = cols % 4 == 0 && aligned16(input) && aligned16(output) &&
                  (affine.weight_len == 0 || aligned16(affine.weight)) && (affine.bias_len == 0 || aligned16(affine.bias));
    float mean, rstd;
    if (cols <= WARP_COLS) {
        unsigned row = blockIdx.x * WARPS + t / 32;
        if (row >= rows) return;
        size_t base = (size_t)row * cols;
        if (vector)
            row_in_registers<CENTERED, true, 32>(input + base, output + base, affine, cols, t % 32, warp_sum, mean, rstd);
        else
            row_in_registers<CENTERED, false, 32>(input + base, output + base, affine, cols, t % 32, warp_sum, mean, rstd);
        if (t % 32 == 0) write_statistics<CENTERED>(mean_out, mean_len, rstd_out, rstd_len, row, mean, rstd);
    } else if (cols <= BLOCK_COLS) {
        unsigned row = blockIdx.x;
        size_t base = (size_t)row * cols;
        auto sum_of = [&](float s) { return block_sum(sums, s); };
        if (vector)
            row_in_registers<CENTERED, true, THREADS>(input + base, output + base, affine, cols, t, sum_of, mean, rstd);
        else
            row_in_registers<CENTERED, false, THREADS>(input + base, output + base, affine, cols, t, sum_of, mean, rstd);
        if (t == 0) write_statistics<CENTERED>(mean_out, mean_len, rstd_out, rstd_len, row, mean, rstd);
    } else {
        block_row<CENTERED>(sums, input, output, affine, mean_out, mean_len, rstd_out, rstd_len, blockIdx.x, cols);
    }
}
