// kernels::softmax::registers: the row in registers, a warp per row up to 1024 columns, a block per
// row up to 8192, the online pass (two reads) beyond.
#include "softmax.cuh"
#define VECTORS 8u
#define SLOTS (4u * VECTORS)
#define WARP_COLS (32u * SLOTS)
#define BLOCK_COLS (THREADS * SLOTS)

__device__ __forceinline__ float warp_max(float m) {
    for (unsigned mask = 16; mask > 0; mask /= 2) {
        float other = __shfl_xor_sync(0xffffffffu, m, mask);
        m = other > m ? other : m;
    }
    return m;
}

__device__ __forceinline__ float warp_sum(float s) {
    for (unsigned mask = 16; mask > 0; mask /= 2) s = s + __shfl_xor_sync(0xffffffffu, s, mask);
    return s;
}

extern "C" __global__ void softmax_registers_cuda(const float* input, float* output, unsigned rows, unsigned cols) {
    extern __shared__ float shared[];
    float *maxes = shared, *sums = shared + WARPS;
    unsigned t = threadIdx.x;
    if (cols > BLOCK_COLS) {
        size_t base = (size_t)blockIdx.x * cols;
        Running r = {-INFINITY, 0.0f};
        for (unsigned c = t; c < cols; c += THREADS) r = running_add(r, input[base + c]);
        Running row = block_running(maxes, sums, r);
        for (unsigned c = t; c < cols; c += THREADS) output[base + c] = fast_exp(input[base + c] - row.max) / row.sum;
        return;
    }
    bool by_warp = cols <= WARP_COLS;
    unsigned row = by_warp ? blockIdx.x * WARPS + t / 32 : blockIdx.x;
    unsigned me = by_warp ? t % 32 : t, group = by_warp ? 32u : THREADS;
    if (row >= rows) return;
    const float* src = input + (size_t)row * cols;
    float* dst = output + (size_t)row * cols;
    bool vector = cols % 4 == 0 && ((unsigned long long)src & 15) == 0 && ((unsigned long long)dst & 15) == 0;
    float x[SLOTS];
#pragma unroll
    for (unsigned s = 0; s < SLOTS; ++s) x[s] = -INFINITY;
    if (vector) {
#pragma unroll
        for (unsigned j = 0; j < VECTORS; ++j) {
            unsigned q = me + group * j;
            if (q < cols / 4) {
                float4 v = ((const float4*)src)[q];
                x[4 * j] = v.x; x[4 * j + 1] = v.y; x[4 * j + 2] = v.z; x[4 * j + 3] = v.w;
            }
        }
    } else {
#pragma unroll
        for (unsigned s = 0; s < SLOTS; ++s) {
            unsigned c = me + group * s;
            if (c < cols) x[s] = src[c];
        }
    }
    float m = -INFINITY;
#pragma unroll
    for (unsigned s = 0; s < SLOTS; ++s) m = x[s] > m ? x[s] : m;
    m = by_warp ? warp_max(m) : block_max(maxes, m);
    float sum = 0.0f;
#pragma unroll
    for (unsigned s = 0; s < SLOTS; ++s) {
        bool holds = vector ? me + group * (s / 4) < cols / 4 : me + group * s < cols;
        if (holds) {
            x[s] = fast_exp(x[s] - m);
            sum = sum + x[s];
        }
    }
    sum = by_warp ? warp_sum(sum) : block_sum(sums, sum);
    float scale = 1.0f / sum;
    if (vector) {
#pragma unroll
        for (unsigned j = 0; j < VECTORS; ++j) {
            unsigned q = me + group * j;
            if (q < cols / 4)
                ((float4*)dst)[q] = make_float4(x[4 * j] * scale, x[4 * j + 1] * scale, x[4 * j + 2] * scale, x[4 * j + 3] * scale);
        }
    } else {
#pragma unroll
        for (unsigned s = 0; s < SLOTS; ++s) {
            unsigned c = me + group * s;
            if (c < cols) dst[c] = x[s] * scale;
        }
    }
}
