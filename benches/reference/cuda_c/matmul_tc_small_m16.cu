// kernels::matmul_tc::small_m16: the TF32 ladder's tensor-core rung for A of up to 16 rows,
// matmul_small_m_mma.cuh on mma.sync m16n8k8.
#include "matmul_small_m_mma.cuh"

extern "C" __global__ void __launch_bounds__(SMALL_M_MMA_THREADS, 2)
    matmul_tc_small_m16_cuda(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k,
                             const void* maps /* the TMA rung's; unused here */, unsigned* arrivals) {
    small_m_mma<Tf32Mma>(a, b, c, m, n, k, arrivals);
}
