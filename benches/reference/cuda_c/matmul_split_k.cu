// kernels::matmul::split_k: the warp-tiled product (matmul_warp_tiled.cuh) over block z's run of k,
// its products added into C with atomicAdd (C zeroed before by the host), at the Rust kernel's
// three configurations.
#include "matmul_warp_tiled.cuh"

template <unsigned BM, unsigned BN, unsigned RI, unsigned RJ>
__device__ __forceinline__ void split_k(const float* a, const float* b, float* c, unsigned m, unsigned n,
                                        unsigned k) {
    using W = WarpTiled<BM, BN, RI, RJ>;
    unsigned row0, col0;
    W::origin(row0, col0);
    unsigned tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
    float acc[RI][RJ][4][4] = {};
    unsigned chunk = ((k + gridDim.z - 1) / gridDim.z + WT_BK - 1) / WT_BK * WT_BK;
    unsigned long long begin_wide = (unsigned long long)blockIdx.z * chunk;
    unsigned begin = begin_wide < k ? (unsigned)begin_wide : k;
    unsigned end = begin + chunk < begin || begin + chunk > k ? k : begin + chunk;
    if (begin == end) return;
    bool vector = k % 4 == 0 && n % 4 == 0 && ((unsigned long long)a & 15) == 0 && ((unsigned long long)b & 15) == 0;
    W::template products<true>(a, b, m, n, k, begin, end, vector, acc);
#pragma unroll
    for (unsigned i = 0; i < RI; ++i)
#pragma unroll
        for (unsigned r = 0; r < 4; ++r) {
            unsigned global_row = tile_row + row0 + 32 * i + r;
#pragma unroll
            for (unsigned j = 0; j < RJ; ++j)
#pragma unroll
                for (unsigned q = 0; q < 4; ++q) {
                    unsigned global_col = tile_col + col0 + 16 * j + q;
                    if (global_row < m && global_col < n) atomicAdd(c + global_row * n + global_col, acc[i][j][r][q]);
                }
        }
}

extern "C" __global__ void __launch_bounds__(128, 4) matmul_split_k_cuda(const float* a, const float* b, float* c,
                                                                         unsigned m, unsigned n, unsigned k) {
    split_k<64, 64, 1, 2>(a, b, c, m, n, k);
}
extern "C" __global__ void __launch_bounds__(128, 4) matmul_split_k_128x64_cuda(const float* a, const float* b,
                                                                                float* c, unsigned m, unsigned n,
                                                                                unsigned k) {
    split_k<128, 64, 2, 2>(a, b, c, m, n, k);
}
extern "C" __global__ void __launch_bounds__(128, 4) matmul_split_k_64x128_cuda(const float* a, const float* b,
                                                                                float* c, unsigned m, unsigned n,
                                                                                unsigned k) {
    split_k<64, 128, 2, 2>(a, b, c, m, n, k);
}
