// Pieces shared by the register-blocked matmul twins (kernels::matmul::register_2d and vectorized):
// a 128×128 tile per block of 256 threads, 8×8 outputs per thread, A's 128×8 slice stored
// transposed (rows padded to 132), B's 8×128 slice dense.
#pragma once

#define BM 128u
#define BN 128u
#define BK 8u
#define TM 8u
#define TN 8u
#define THREADS ((BM / TM) * (BN / TN))
#define A_PITCH (BM + 4u)

// kernels::matmul::register_2d::stage_scalar: 4 elements of each slice per thread, zeros outside.
__device__ __forceinline__ void stage_scalar(float* a_slice, float* b_slice, const float* a, const float* b, unsigned m,
                                             unsigned n, unsigned k, unsigned k0) {
    unsigned t = threadIdx.x, tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
#pragma unroll
    for (unsigned r = 0; r < BM * BK / THREADS; ++r) {
        unsigned i = t + THREADS * r, row = i / BK, kk = i % BK;
        unsigned global_row = tile_row + row, global_k = k0 + kk;
        a_slice[kk * A_PITCH + row] = (global_row < m && global_k < k) ? a[global_row * k + global_k] : 0.0f;
    }
#pragma unroll
    for (unsigned r = 0; r < BK * BN / THREADS; ++r) {
        unsigned i = t + THREADS * r, kk = i / BN, col = i % BN;
        unsigned global_k = k0 + kk, global_col = tile_col + col;
        b_slice[kk * BN + col] = (global_k < k && global_col < n) ? b[global_k * n + global_col] : 0.0f;
    }
}

// kernels::matmul::register_2d::add_outer_product.
__device__ __forceinline__ void add_outer_product(float acc[TM][TN], const float column[TM], const float row[TN]) {
#pragma unroll
    for (unsigned i = 0; i < TM; ++i)
#pragma unroll
        for (unsigned j = 0; j < TN; ++j) acc[i][j] = fmaf(column[i], row[j], acc[i][j]);
}

// kernels::matmul::register_2d::write_scalar: the thread's block into C, inside C only.
__device__ __forceinline__ void write_scalar(float* c, const float acc[TM][TN], unsigned m, unsigned n) {
    unsigned t = threadIdx.x;
    unsigned row0 = t / (BN / TN) * TM, col0 = t % (BN / TN) * TN;
    unsigned tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
#pragma unroll
    for (unsigned i = 0; i < TM; ++i) {
        unsigned global_row = tile_row + row0 + i;
#pragma unroll
        for (unsigned j = 0; j < TN; ++j) {
            unsigned global_col = tile_col + col0 + j;
            if (global_row < m && global_col < n) c[global_row * n + global_col] = acc[i][j];
        }
    }
}
