// kernels::softmax::wide: the row in the registers of one block per row, 32 elements per thread:
// 1024 threads (rows up to 32768 columns, one block per SM) or 512 (rows up to 16384, two per SM);
// the online pass (two reads) beyond.
#include "softmax.cuh"
#define WIDE_VECTORS 8u

template <unsigned THREADS_, unsigned WARPS_>
__device__ __forceinline__ void wide_row(const float* input, float* output, unsigned cols) {
    extern __shared__ float shared[];
    // As kernels::softmax::wide::WidePairs: 32 maxima, then 32 sums, whatever the block.
    float *maxes = shared, *sums = shared + 32;
    unsigned t = threadIdx.x;
    if (cols > THREADS_ * 4 * WIDE_VECTORS) {
        online_row<THREADS_, WARPS_>(maxes, sums, input, output, blockIdx.x, cols);
        return;
    }
    size_t base = (size_t)blockIdx.x * cols;
    row_in_registers<WIDE_VECTORS>(input + base, output + base, cols, t, THREADS_,
                                   [&](float m) { return block_max<WARPS_>(maxes, m); },
                                   [&](float s) { return block_sum<WARPS_>(sums, s); });
}

extern "C" __global__ void __launch_bounds__(1024, 1)
    softmax_wide_cuda(const float* input, size_t input_len, float* output, size_t output_len, unsigned rows,
                      unsigned cols) {
    wide_row<1024, 32>(input, output, cols);
}
extern "C" __global__ void __launch_bounds__(512, 2)
    softmax_wide_512_cuda(const float* input, size_t input_len, float* output, size_t output_len, unsigned rows,
                          unsigned cols) {
    wide_row<512, 16>(input, output, cols);
}
