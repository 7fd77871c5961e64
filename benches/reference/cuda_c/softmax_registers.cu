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

extern "C" __global__ void softmax_registers_cuda(const float* input, size_t input_len, float* output,
                                                  size_t output_len, unsigned rows, unsigned cols) {
    extern __shared__ float shared[];
    float *maxes = shared, *sums = shared + WARPS;
    unsigned t = threadIdx.x;
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
