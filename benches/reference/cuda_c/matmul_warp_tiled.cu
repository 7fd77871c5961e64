// C = A·B with warp tiling and register-prefetched double buffering (kernels::matmul::warp_tiled):
// a 128×128 tile per block of 256 threads, 64×32 per warp, each lane 2×2 blocks of 4×4 (rows 32
// apart, columns 16 apart); the next step's float4s of A and B loaded into registers before the
// multiply and stored into the other pair of slices after it. Two blocks per SM.
#include "matmul_blocking.cuh"
#define WM 64u
#define WN 32u
#define LANE_ROWS 8u
#define LANE_COLS 4u
#define SLICE_FLOATS (BK * A_PITCH + BK * BN)

__device__ __forceinline__ void prefetch(const float* a, const float* b, unsigned m, unsigned n, unsigned k, unsigned k0,
                                         float4* a_four, float4* b_four) {
    unsigned t = threadIdx.x, tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
    unsigned row = t / (BK / 4), kk = 4 * (t % (BK / 4));
    unsigned global_row = tile_row + row, global_k = k0 + kk;
    *a_four = (global_row < m && global_k < k) ? *(const float4*)(a + global_row * k + global_k)
                                               : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    unsigned kb = t / (BN / 4), col = 4 * (t % (BN / 4));
    unsigned global_kb = k0 + kb, global_col = tile_col + col;
    *b_four = (global_kb < k && global_col < n) ? *(const float4*)(b + global_kb * n + global_col)
                                                : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

__device__ __forceinline__ void store_prefetched(float* a_slice, float* b_slice, float4 a_four, float4 b_four) {
    unsigned t = threadIdx.x;
    unsigned row = t / (BK / 4), kk = 4 * (t % (BK / 4));
    a_slice[(kk + 0) * A_PITCH + row] = a_four.x;
    a_slice[(kk + 1) * A_PITCH + row] = a_four.y;
    a_slice[(kk + 2) * A_PITCH + row] = a_four.z;
    a_slice[(kk + 3) * A_PITCH + row] = a_four.w;
    *(float4*)(b_slice + (t / (BN / 4)) * BN + 4 * (t % (BN / 4))) = b_four;
}

extern "C" __global__ void __launch_bounds__(256, 2) matmul_warp_tiled_cuda(const float* a, const float* b, float* c,
                                                                            unsigned m, unsigned n, unsigned k) {
    extern __shared__ __align__(16) float shared[];
    // a0, b0, a1, b1, as kernels::matmul::warp_tiled::Buffers carves them.
    float* a_slices[2] = {shared, shared + SLICE_FLOATS};
    float* b_slices[2] = {shared + BK * A_PITCH, shared + SLICE_FLOATS + BK * A_PITCH};
    unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    unsigned row0 = warp / (BN / WN) * WM + lane / LANE_COLS * 4;
    unsigned col0 = warp % (BN / WN) * WN + lane % LANE_COLS * 4;
    bool vector = k % 4 == 0 && n % 4 == 0 && ((unsigned long long)a & 15) == 0 && ((unsigned long long)b & 15) == 0 &&
                  ((unsigned long long)c & 15) == 0;
    unsigned steps = (k + BK - 1) / BK;
    float acc[TM][TN] = {};
    if (vector) {
        float4 a_four, b_four;
        prefetch(a, b, m, n, k, 0, &a_four, &b_four);
        store_prefetched(a_slices[0], b_slices[0], a_four, b_four);
    } else {
        stage_scalar(a_slices[0], b_slices[0], a, b, m, n, k, 0);
    }
    __syncthreads();
    for (unsigned step = 0; step < steps; ++step) {
        bool next = step + 1 < steps;
        float4 a_four, b_four;
        if (vector && next) prefetch(a, b, m, n, k, (step + 1) * BK, &a_four, &b_four);
        const float* a_slice = a_slices[step % 2];
        const float* b_slice = b_slices[step % 2];
#pragma unroll 1
        for (unsigned kk = 0; kk < BK; ++kk) {
            float4 a0 = *(const float4*)(a_slice + kk * A_PITCH + row0), a1 = *(const float4*)(a_slice + kk * A_PITCH + row0 + 32);
            float4 b0 = *(const float4*)(b_slice + kk * BN + col0), b1 = *(const float4*)(b_slice + kk * BN + col0 + 16);
            float column[TM] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            float row[TN] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
            add_outer_product(acc, column, row);
        }
        if (vector && next)
            store_prefetched(a_slices[(step + 1) % 2], b_slices[(step + 1) % 2], a_four, b_four);
        else if (next)
            stage_scalar(a_slices[(step + 1) % 2], b_slices[(step + 1) % 2], a, b, m, n, k, (step + 1) * BK);
        __syncthreads();
    }
    unsigned tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
#pragma unroll
    for (unsigned i = 0; i < TM; ++i) {
        unsigned global_row = tile_row + row0 + (i / 4) * 32 + i % 4;
#pragma unroll
        for (unsigned h = 0; h < 2; ++h) {
            unsigned global_col = tile_col + col0 + h * 16;
            if (vector) {
                if (global_row < m && global_col < n)
                    *(float4*)(c + global_row * n + global_col) =
                        make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
            } else {
#pragma unroll
                for (unsigned j = 0; j < 4; ++j)
                    if (global_row < m && global_col + j < n) c[global_row * n + global_col + j] = acc[i][4 * h + j];
            }
        }
    }
}
