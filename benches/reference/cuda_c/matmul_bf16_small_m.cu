// kernels::matmul_bf16::small_m: the bf16 ladder's small-m rung, matmul_small_m.cuh reading bf16,
// eight columns per lane.
#include "matmul_small_m.cuh"

extern "C" __global__ void __launch_bounds__(SMALL_M_THREADS, 3)
    matmul_bf16_small_m1_cuda(const unsigned short* a, const unsigned short* b, float* c, unsigned m, unsigned n,
                              unsigned k, const void* maps /* the TMA kernel's; unused here */, unsigned* arrivals) {
    small_m<Bf16Operands, 1, 8>(a, b, c, m, n, k, arrivals);
}

extern "C" __global__ void __launch_bounds__(SMALL_M_THREADS, 2)
    matmul_bf16_small_m4_cuda(const unsigned short* a, const unsigned short* b, float* c, unsigned m, unsigned n,
                              unsigned k, const void* maps /* the TMA kernel's; unused here */, unsigned* arrivals) {
    small_m<Bf16Operands, 4, 8>(a, b, c, m, n, k, arrivals);
}

extern "C" __global__ void __launch_bounds__(SMALL_M_THREADS, 1)
    matmul_bf16_small_m8_cuda(const unsigned short* a, const unsigned short* b, float* c, unsigned m, unsigned n,
                              unsigned k, const void* maps /* the TMA kernel's; unused here */, unsigned* arrivals) {
    small_m<Bf16Operands, 8, 8>(a, b, c, m, n, k, arrivals);
}
