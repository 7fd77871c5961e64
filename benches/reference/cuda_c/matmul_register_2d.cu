// C = A·B with 2D register blocking (kernels::matmul::register_2d): a 128×128 tile per block of 256
// threads, an 8×8 block of outputs per thread; A's 128×8 slice stored transposed, rows padded by 4.
#include "matmul_blocking.cuh"

extern "C" __global__ void matmul_register_2d_cuda(const float* a, const float* b, float* c, unsigned m, unsigned n,
                                                   unsigned k, unsigned* /* arrivals: split-k's */) {
    extern __shared__ float shared[];
    float* a_slice = shared;                // BK rows of A_PITCH
    float* b_slice = shared + BK * A_PITCH; // BK rows of BN
    unsigned t = threadIdx.x;
    unsigned row0 = t / (BN / TN) * TM, col0 = t % (BN / TN) * TN;
    float acc[TM][TN] = {};
    for (unsigned step = 0; step < (k + BK - 1) / BK; ++step) {
        stage_scalar(a_slice, b_slice, a, b, m, n, k, step * BK);
        __syncthreads();
#pragma unroll
        for (unsigned kk = 0; kk < BK; ++kk) {
            float column[TM], row[TN];
#pragma unroll
            for (unsigned i = 0; i < TM; ++i) column[i] = a_slice[kk * A_PITCH + row0 + i];
#pragma unroll
            for (unsigned j = 0; j < TN; ++j) row[j] = b_slice[kk * BN + col0 + j];
            add_outer_product(acc, column, row);
        }
        __syncthreads();
    }
    write_scalar(c, acc, m, n);
}
