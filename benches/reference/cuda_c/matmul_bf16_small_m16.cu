// kernels::matmul_bf16::small_m16: the bf16 ladder's tensor-core rung for A of up to 16 rows,
// matmul_small_m_mma.cuh on mma.sync m16n8k16.
#include "matmul_small_m_mma.cuh"

extern "C" __global__ void __launch_bounds__(SMALL_M_MMA_THREADS, 2)
    matmul_bf16_small_m16_cuda(const unsigned short* a, const unsigned short* b, float* c, unsigned m, unsigned n,
                               unsigned k, const void* maps /* the TMA kernel's; unused here */,
                               unsigned* arrivals) {
    small_m_mma<Bf16Mma>(a, b, c, m, n, k, arrivals);
}
