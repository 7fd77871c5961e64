// kernels::norm::residual: the norm of h = x + residual (rounded to the element type, written out
// as the sum), f32 or bf16 (kept as its bits), in f32; the row in registers (a warp per row up to
// 1024 columns, a block up to 8192), three passes beyond, h recomputed in each.
#pragma once
#include "element.cuh"
#include "norm.cuh"
#define RESIDUAL_SLOTS 32u
#define RESIDUAL_WARP_COLS (32u * RESIDUAL_SLOTS)
#define RESIDUAL_BLOCK_COLS (THREADS * RESIDUAL_SLOTS)

template <class E>
struct ResidualRow {
    const E *x, *residual;
    E *sum, *y;
    bool has_residual;
    __device__ float h(unsigned c) const {
        float v = Element<E>::to_f32(x[c]);
        if (!has_residual) return v;
        return Element<E>::to_f32(Element<E>::from_f32(v + Element<E>::to_f32(residual[c])));
    }
};

template <class E>
struct ResidualAffine {
    const E* weight;
    size_t weight_len;
    const E* bias;
    size_t bias_len;
    float eps;
    __device__ float apply(float h, float mean, float rstd, float w, float b) const {
        float y = __fmul_rn(h - mean, rstd);
        if (weight_len != 0) y = __fmul_rn(y, w);
        if (bias_len != 0) y = __fadd_rn(y, b);
        return y;
    }
    __device__ float w(unsigned c) const { return weight_len != 0 ? Element<E>::to_f32(weight[c]) : 1.0f; }
    __device__ float b(unsigned c) const { return bias_len != 0 ? Element<E>::to_f32(bias[c]) : 0.0f; }
    template <bool CENTERED>
    __device__ float rstd(float variance) const { return __fdiv_rn(1.0f, __fsqrt_rn(variance + eps)) + (CENTERED ? 0.0f : variance - variance); }
};

__device__ __forceinline__ float residual_warp_sum(float s) {
    for (unsigned mask = 16; mask > 0; mask /= 2) s = __fadd_rn(s, __shfl_xor_sync(0xffffffffu, s, mask));
    return s;
}

template <class E, bool CENTERED, bool VECTOR, unsigned GROUP, class SumOf>
__device__ __forceinline__ void residual_in_registers(ResidualRow<E> row, ResidualAffine<E> affine, unsigned cols,
                                                      unsigned me, SumOf sum_of, float& mean_out, float& rstd_out) {
    constexpr unsigned L = Element<E>::LANES;
    auto column = [&](unsigned s) { return VECTOR ? L * (me + GROUP * (s / L)) + s % L : me + GROUP * s; };
    float h[RESIDUAL_SLOTS];
#pragma unroll
    for (unsigned s = 0; s < RESIDUAL_SLOTS; ++s) h[s] = 0.0f;
#pragma unroll
    for (unsigned s = 0; s < RESIDUAL_SLOTS; ++s) {
        unsigned c = column(s);
        if (VECTOR) {
            if (s % L == 0 && c < cols) {
                float x[8], r[8];
                Element<E>::load(row.x + c, x);
                if (row.has_residual) {
                    Element<E>::load(row.residual + c, r);
                    for (unsigned k = 0; k < L; ++k) x[k] = Element<E>::to_f32(Element<E>::from_f32(x[k] + r[k]));
                    Element<E>::store(row.sum + c, x);
                }
                for (unsigned k = 0; k < L; ++k) h[s + k] = x[k];
            }
        } else if (c < cols) {
            h[s] = row.h(c);
            if (row.has_residual) row.sum[c] = Element<E>::from_f32(h[s]);
        }
    }
    float mean = 0.0f;
    if (CENTERED) {
        float sum = 0.0f;
#pragma unroll
        for (unsigned s = 0; s < RESIDUAL_SLOTS; ++s) sum = __fadd_rn(sum, h[s]);
        mean = __fdiv_rn(sum_of(sum), (float)cols);
    }
    float squares = 0.0f;
#pragma unroll
    for (unsigned s = 0; s < RESIDUAL_SLOTS; ++s)
        if (column(s) < cols) {
            float d = h[s] - mean;
            squares = __fadd_rn(squares, __fmul_rn(d, d));
        }
    float rstd = affine.template rstd<CENTERED>(__fdiv_rn(sum_of(squares), (float)cols));
#pragma unroll
    for (unsigned s = 0; s < RESIDUAL_SLOTS; ++s) {
        unsigned c = column(s);
        if (VECTOR) {
            if (s % L == 0 && c < cols) {
                float w[8], b[8], y[8];
                for (unsigned k = 0; k < 8; ++k) w[k] = 1.0f, b[k] = 0.0f;
                if (affine.weight_len != 0) Element<E>::load(affine.weight + c, w);
                if (affine.bias_len != 0) Element<E>::load(affine.bias + c, b);
                for (unsigned k = 0; k < L; ++k) y[k] = affine.apply(h[s + k], mean, rstd, w[k], b[k]);
                Element<E>::store(row.y + c, y);
            }
        } else if (c < cols) {
            row.y[c] = Element<E>::from_f32(affine.apply(h[s], mean, rstd, affine.w(c), affine.b(c)));
        }
    }
    mean_out = mean, rstd_out = rstd;
}

template <class E, bool CENTERED>
__device__ __forceinline__ void residual_three_pass(float* sums, ResidualRow<E> row, ResidualAffine<E> affine,
                                                    unsigned cols, float& mean_out, float& rstd_out) {
    unsigned t = threadIdx.x;
    float mean = 0.0f;
    if (CENTERED) {
        float sum = 0.0f;
        for (unsigned c = t; c < cols; c += THREADS) sum = __fadd_rn(sum, row.h(c));
        mean = __fdiv_rn(block_sum(sums, sum), (float)cols);
    }
    float squares = 0.0f;
    for (unsigned c = t; c < cols; c += THREADS) {
        float d = row.h(c) - mean;
        squares = __fadd_rn(squares, __fmul_rn(d, d));
    }
    float rstd = affine.template rstd<CENTERED>(__fdiv_rn(block_sum(sums, squares), (float)cols));
    for (unsigned c = t; c < cols; c += THREADS) {
        float h = row.h(c);
        if (row.has_residual) row.sum[c] = Element<E>::from_f32(h);
        row.y[c] = Element<E>::from_f32(affine.apply(h, mean, rstd, affine.w(c), affine.b(c)));
    }
    mean_out = mean, rstd_out = rstd;
}

__device__ __forceinline__ bool residual_aligned(const void* p, size_t len) {
    return len == 0 || reinterpret_cast<size_t>(p) % 16 == 0;
}

#define RESIDUAL_PARAMETERS(E)                                                                                  \
    const E *input, size_t input_len, const E *residual, size_t residual_len, E *sum, size_t sum_len,            \
        const E *weight, size_t weight_len, const E *bias, size_t bias_len, E *output, size_t output_len,        \
        float *mean, size_t mean_len, float *rstd, size_t rstd_len, unsigned rows, unsigned cols, float eps

template <class E, bool CENTERED>
__device__ __forceinline__ void residual_normalise(RESIDUAL_PARAMETERS(E)) {
    extern __shared__ float sums[];
    unsigned t = threadIdx.x;
    ResidualAffine<E> affine{weight, weight_len, bias, bias_len, eps};
    bool has_residual = residual_len != 0;
    bool vector = cols % Element<E>::LANES == 0 && residual_aligned(input, 1) && residual_aligned(output, 1) &&
                  residual_aligned(residual, residual_len) && residual_aligned(sum, sum_len) &&
                  residual_aligned(weight, weight_len) && residual_aligned(bias, bias_len);
    auto views = [&](unsigned r) {
        size_t base = (size_t)r * cols;
        return ResidualRow<E>{input + base, residual + (has_residual ? base : 0), sum + (has_residual ? base : 0),
                              output + base, has_residual};
    };
    float m, s;
    if (cols <= RESIDUAL_WARP_COLS) {
        unsigned r = blockIdx.x * WARPS + t / 32;
        if (r >= rows) return;
        if (vector)
            residual_in_registers<E, CENTERED, true, 32>(views(r), affine, cols, t % 32, residual_warp_sum, m, s);
        else
            residual_in_registers<E, CENTERED, false, 32>(views(r), affine, cols, t % 32, residual_warp_sum, m, s);
        if (t % 32 == 0) write_statistics<CENTERED>(mean, mean_len, rstd, rstd_len, r, m, s);
    } else {
        unsigned r = blockIdx.x;
        auto sum_of = [&](float v) { return block_sum(sums, v); };
        if (cols > RESIDUAL_BLOCK_COLS)
            residual_three_pass<E, CENTERED>(sums, views(r), affine, cols, m, s);
        else if (vector)
            residual_in_registers<E, CENTERED, true, THREADS>(views(r), affine, cols, t, sum_of, m, s);
        else
            residual_in_registers<E, CENTERED, false, THREADS>(views(r), affine, cols, t, sum_of, m, s);
        if (t == 0) write_statistics<CENTERED>(mean, mean_len, rstd, rstd_len, r, m, s);
    }
}
