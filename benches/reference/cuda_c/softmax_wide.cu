// kernels::softmax::wide: the row in the registers of a 1024-thread block (32 elements per thread,
// rows up to 32768 columns), the online pass (two reads) beyond; one block per SM.
#include "softmax.cuh"
#define WIDE_THREADS 1024u
#define WIDE_WARPS (WIDE_THREADS / 32u)
#define WIDE_VECTORS 8u

extern "C" __global__ void __launch_bounds__(1024, 1) softmax_wide_cuda(const float* input, float* output, unsigned rows,
                                                                       unsigned cols) {
    extern __shared__ float shared[];
    float *maxes = shared, *sums = shared + WIDE_WARPS;
    unsigned t = threadIdx.x;
    if (cols > WIDE_THREADS * 4 * WIDE_VECTORS) {
        online_row<WIDE_THREADS, WIDE_WARPS>(maxes, sums, input, output, blockIdx.x, cols);
        return;
    }
    size_t base = (size_t)blockIdx.x * cols;
    row_in_registers<WIDE_VECTORS>(input + base, output + base, cols, t, WIDE_THREADS,
                                   [&](float m) { return block_max<WIDE_WARPS>(maxes, m); },
                                   [&](float s) { return block_sum<WIDE_WARPS>(sums, s); });
}
