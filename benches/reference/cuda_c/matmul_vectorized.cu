// C = A·B with 2D register blocking and 16-byte accesses (kernels::matmul::vectorized): a 128×128
// tile per block of 256 threads, 8×8 outputs per thread; one float4 of each slice staged per thread
// where k and n are multiples of 4 and the matrices aligned (else one element at a time); the
// column and row of each step read as two float4 each. At most 128 registers (two blocks per SM).
#include "matmul_blocking.cuh"

extern "C" __global__ void __launch_bounds__(256, 2) matmul_vectorized_cuda(const float* a, const float* b, float* c,
                                                                            unsigned m, unsigned n, unsigned k, unsigned* /* arrivals: split-k's */) {
    extern __shared__ __align__(16) float shared[];
    float* a_slice = shared;
    float* b_slice = shared + BK * A_PITCH;
    unsigned t = threadIdx.x;
    unsigned tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
    unsigned row0 = t / (BN / TN) * TM, col0 = t % (BN / TN) * TN;
    bool vector = k % 4 == 0 && n % 4 == 0 && ((unsigned long long)a & 15) == 0 && ((unsigned long long)b & 15) == 0 &&
                  ((unsigned long long)c & 15) == 0;
    float acc[TM][TN] = {};
    for (unsigned step = 0; step < (k + BK - 1) / BK; ++step) {
        unsigned k0 = step * BK;
        if (vector) {
            unsigned row = t / (BK / 4), kk = 4 * (t % (BK / 4));
            unsigned global_row = tile_row + row, global_k = k0 + kk;
            float4 four = (global_row < m && global_k < k) ? *(const float4*)(a + global_row * k + global_k)
                                                           : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            a_slice[(kk + 0) * A_PITCH + row] = four.x;
            a_slice[(kk + 1) * A_PITCH + row] = four.y;
            a_slice[(kk + 2) * A_PITCH + row] = four.z;
            a_slice[(kk + 3) * A_PITCH + row] = four.w;
            unsigned kb = t / (BN / 4), col = 4 * (t % (BN / 4));
            unsigned global_kb = k0 + kb, global_col = tile_col + col;
            float4 fb = (global_kb < k && global_col < n) ? *(const float4*)(b + global_kb * n + global_col)
                                                         : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            *(float4*)(b_slice + kb * BN + col) = fb;
        } else {
            stage_scalar(a_slice, b_slice, a, b, m, n, k, k0);
        }
        __syncthreads();
#pragma unroll 1
        for (unsigned kk = 0; kk < BK; ++kk) {
            float4 a0 = *(const float4*)(a_slice + kk * A_PITCH + row0), a1 = *(const float4*)(a_slice + kk * A_PITCH + row0 + 4);
            float4 b0 = *(const float4*)(b_slice + kk * BN + col0), b1 = *(const float4*)(b_slice + kk * BN + col0 + 4);
            float column[TM] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            float row[TN] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
            add_outer_product(acc, column, row);
        }
        __syncthreads();
    }
    if (!vector) {
        write_scalar(c, acc, m, n);
        return;
    }
#pragma unroll
    for (unsigned i = 0; i < TM; ++i) {
        unsigned global_row = tile_row + row0 + i;
#pragma unroll
        for (unsigned h = 0; h < TN / 4; ++h) {
            unsigned global_col = tile_col + col0 + 4 * h;
            if (global_row < m && global_col < n)
                *(float4*)(c + global_row * n + global_col) =
                    make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
        }
    }
}
