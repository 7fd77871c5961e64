// kernels::matmul_tc::small_m: the TF32 ladder's small-m rung, matmul_small_m.cuh with each operand
// cut to TF32 as the tensor cores read it.
#include "matmul_small_m.cuh"

extern "C" __global__ void __launch_bounds__(SMALL_M_THREADS, 4)
    matmul_tc_small_m1_cuda(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k,
                            const void* maps /* the TMA rung's; unused here */, unsigned* arrivals) {
    small_m<Tf32Operands, 1, 4>(a, b, c, m, n, k, arrivals);
}

extern "C" __global__ void __launch_bounds__(SMALL_M_THREADS, 2)
    matmul_tc_small_m4_cuda(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k,
                            const void* maps /* the TMA rung's; unused here */, unsigned* arrivals) {
    small_m<Tf32Operands, 4, 4>(a, b, c, m, n, k, arrivals);
}

extern "C" __global__ void __launch_bounds__(SMALL_M_THREADS, 1)
    matmul_tc_small_m8_cuda(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k,
                            const void* maps /* the TMA rung's; unused here */, unsigned* arrivals) {
    small_m<Tf32Operands, 8, 4>(a, b, c, m, n, k, arrivals);
}
