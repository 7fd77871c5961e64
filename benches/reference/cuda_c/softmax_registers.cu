// kernels::softmax::registers: the row in registers, groups of lanes taking batches of rows up to
// 128 columns (each warp batch after batch), a warp per row up to 1024 columns, a block per row up
// to 8192, the online pass (two reads) beyond.
#include "softmax.cuh"
#define VECTORS 8u
#define SLOTS (4u * VECTORS)
#define WARP_COLS (32u * SLOTS)
#define BLOCK_COLS (THREADS * SLOTS)
#define NARROW_VECTORS 2u
#define NARROW_COLS (16u * 4u * NARROW_VECTORS)

// kernels::softmax::registers::group_combine: over the G lanes of this lane's group.
template <unsigned G>
__device__ __forceinline__ float group_max(float m) {
    for (unsigned mask = G / 2; mask > 0; mask /= 2) {
        float other = __shfl_xor_sync(0xffffffffu, m, mask);
        m = other > m ? other : m;
    }
    return m;
}

template <unsigned G>
__device__ __forceinline__ float group_sum(float s) {
    for (unsigned mask = G / 2; mask > 0; mask /= 2) s = s + __shfl_xor_sync(0xffffffffu, s, mask);
    return s;
}

// kernels::softmax::registers::narrow_rows: 32 / G rows a warp at a time, batches a grid's warps
// apart; a group past the last row takes that row with no columns.
template <unsigned G>
__device__ __forceinline__ void narrow_rows(const float* input, float* output, unsigned rows, unsigned cols) {
    unsigned t = threadIdx.x, lane = t % 32, per_warp = 32 / G;
    unsigned batches = (rows + per_warp - 1) / per_warp;
    bool vector = cols % 4 == 0 && ((unsigned long long)input & 15) == 0 && ((unsigned long long)output & 15) == 0;
    for (unsigned batch = blockIdx.x * WARPS + t / 32; batch < batches; batch += gridDim.x * WARPS) {
        size_t row = (size_t)batch * per_warp + lane / G;
        unsigned width = cols;
        if (row >= rows) row = rows - 1, width = 0;
        size_t base = row * cols;
        row_in_registers_as<NARROW_VECTORS>(input + base, output + base, width, lane % G, G, vector, group_max<G>,
                                            group_sum<G>);
    }
}

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

extern "C" __global__ void softmax_registers_cuda(const float* input, size_t input_len, float* output,
                                                  size_t output_len, unsigned rows, unsigned cols) {
    extern __shared__ float shared[];
    float *maxes = shared, *sums = shared + WARPS;
    unsigned t = threadIdx.x;
    if (cols <= NARROW_COLS) {
        unsigned g = (cols + 4 * NARROW_VECTORS - 1) / (4 * NARROW_VECTORS);
        if (g <= 1) narrow_rows<1>(input, output, rows, cols);
        else if (g <= 2) narrow_rows<2>(input, output, rows, cols);
        else if (g <= 4) narrow_rows<4>(input, output, rows, cols);
        else if (g <= 8) narrow_rows<8>(input, output, rows, cols);
        else narrow_rows<16>(input, output, rows, cols);
        return;
    }
    if (cols > BLOCK_COLS) {
        online_row<THREADS, WARPS>(maxes, sums, input, output, blockIdx.x, cols);
        return;
    }
    bool by_warp = cols <= WARP_COLS;
    unsigned row = by_warp ? blockIdx.x * WARPS + t / 32 : blockIdx.x;
    unsigned me = by_warp ? t % 32 : t, group = by_warp ? 32u : THREADS;
    if (row >= rows) return;
    size_t base = (size_t)row * cols;
    row_in_registers<VECTORS>(input + base, output + base, cols, me, group,
                              [&](float m) { return by_warp ? warp_max(m) : block_max(maxes, m); },
                              [&](float s) { return by_warp ? warp_sum(s) : block_sum(sums, s); });
}
