// C = A·B with warp tiling and register-prefetched double buffering (kernels::matmul::warp_tiled),
// at the Rust kernel's configurations (matmul_warp_tiled.cuh), the results stored 16 bytes at a
// time where k and n are multiples of 4 and the matrices aligned.
#include "matmul_warp_tiled.cuh"

template <unsigned BM, unsigned BN, unsigned RI, unsigned RJ, bool OVERLAP_SCALARS>
__device__ __forceinline__ void warp_tiled(const float* a, const float* b, float* c, unsigned m, unsigned n,
                                           unsigned k) {
    using W = WarpTiled<BM, BN, RI, RJ>;
    bool vector = k % 4 == 0 && n % 4 == 0 && ((unsigned long long)a & 15) == 0 &&
                  ((unsigned long long)b & 15) == 0 && ((unsigned long long)c & 15) == 0;
    float acc[RI][RJ][4][4] = {};
    W::template products<OVERLAP_SCALARS>(a, b, m, n, k, 0, k, vector, acc);
    unsigned row0, col0;
    W::origin(row0, col0);
    unsigned tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
#pragma unroll
    for (unsigned i = 0; i < RI; ++i)
#pragma unroll
        for (unsigned r = 0; r < 4; ++r) {
            unsigned global_row = tile_row + row0 + 32 * i + r;
#pragma unroll
            for (unsigned j = 0; j < RJ; ++j) {
                unsigned global_col = tile_col + col0 + 16 * j;
                if (vector) {
                    if (global_row < m && global_col < n)
                        *(float4*)(c + global_row * n + global_col) =
                            make_float4(acc[i][j][r][0], acc[i][j][r][1], acc[i][j][r][2], acc[i][j][r][3]);
                } else {
#pragma unroll
                    for (unsigned q = 0; q < 4; ++q)
                        if (global_row < m && global_col + q < n) c[global_row * n + global_col + q] = acc[i][j][r][q];
                }
            }
        }
}

extern "C" __global__ void __launch_bounds__(256, 2) matmul_warp_tiled_cuda(const float* a, const float* b, float* c,
                                                                            unsigned m, unsigned n, unsigned k) {
    warp_tiled<128, 128, 2, 2, true>(a, b, c, m, n, k);
}
extern "C" __global__ void __launch_bounds__(128, 4) matmul_warp_tiled_128x64_cuda(const float* a, const float* b,
                                                                                   float* c, unsigned m, unsigned n,
                                                                                   unsigned k) {
    warp_tiled<128, 64, 2, 2, true>(a, b, c, m, n, k);
}
extern "C" __global__ void __launch_bounds__(128, 4) matmul_warp_tiled_64x64_cuda(const float* a, const float* b,
                                                                                  float* c, unsigned m, unsigned n,
                                                                                  unsigned k) {
    warp_tiled<64, 64, 1, 2, true>(a, b, c, m, n, k);
}
extern "C" __global__ void __launch_bounds__(256, 1) matmul_warp_tiled_128x256_wide_cuda(const float* a, const float* b,
                                                                                   float* c, unsigned m, unsigned n,
                                                                                   unsigned k) {
    warp_tiled<128, 256, 2, 4, true>(a, b, c, m, n, k);
}
extern "C" __global__ void __launch_bounds__(128, 2) matmul_warp_tiled_128x128_wide_cuda(const float* a,
                                                                                        const float* b, float* c,
                                                                                        unsigned m, unsigned n,
                                                                                        unsigned k) {
    warp_tiled<128, 128, 2, 4, false>(a, b, c, m, n, k);
}
