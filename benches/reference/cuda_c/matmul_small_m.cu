// kernels::matmul::small_m at its three f32 configurations: one, four and eight rows of A per block
// (matmul_small_m.cuh).
#include "matmul_small_m.cuh"

extern "C" __global__ void __launch_bounds__(SMALL_M_THREADS, 4)
    matmul_small_m1_cuda(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k,
                         unsigned* arrivals) {
    small_m<F32Operands, 1, 4>(a, b, c, m, n, k, arrivals);
}

extern "C" __global__ void __launch_bounds__(SMALL_M_THREADS, 2)
    matmul_small_m4_cuda(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k,
                         unsigned* arrivals) {
    small_m<F32Operands, 4, 4>(a, b, c, m, n, k, arrivals);
}

extern "C" __global__ void __launch_bounds__(SMALL_M_THREADS, 1)
    matmul_small_m8_cuda(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k,
                         unsigned* arrivals) {
    small_m<F32Operands, 8, 4>(a, b, c, m, n, k, arrivals);
}
