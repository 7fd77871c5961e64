// kernels::matmul::split_k: the warp-tiled product (matmul_warp_tiled.cuh) over block z's run of k,
// the runs meeting in C through the tile's counter in `arrivals` (k_runs.cuh); at the Rust kernel's
// three configurations, and the multistage product (matmul_multistage.cuh) at its two.
#include "k_runs.cuh"
#include "matmul_multistage.cuh"
#include "matmul_warp_tiled.cuh"

template <unsigned BM, unsigned BN, unsigned RI, unsigned RJ, bool MULTISTAGE>
__device__ __forceinline__ void split_k(const float* a, const float* b, float* c, unsigned m, unsigned n,
                                        unsigned k, unsigned* arrivals) {
    using W = WarpTiled<BM, BN, RI, RJ>;
    float acc[RI][RJ][4][4] = {};
    KRun run = run_of_k<WT_BK>(k);
    if (run.begin == run.end) return;
    bool vector = k % 4 == 0 && n % 4 == 0 && ((unsigned long long)a & 15) == 0 && ((unsigned long long)b & 15) == 0;
    bool wide_store = n % 4 == 0 && ((unsigned long long)c & 15) == 0;
    if constexpr (MULTISTAGE)
        Multistage<BM, BN, RI, RJ>::run_products(a, b, m, n, k, run.begin, run.end, acc);
    else
        W::template products<true>(a, b, m, n, k, run.begin, run.end, vector, acc);
    meet_in_c(
        arrivals, run.runs, [&] { W::store_tile(c, m, n, acc, wide_store); },
        [&] {
            unsigned row0, col0;
            W::origin(row0, col0);
            unsigned tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
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
                            if (global_row < m && global_col < n)
                                red_add(c + global_row * n + global_col, acc[i][j][r][q]);
                        }
                }
        });
}

extern "C" __global__ void __launch_bounds__(128, 4) matmul_split_k_cuda(const float* a, const float* b, float* c,
                                                                         unsigned m, unsigned n, unsigned k, unsigned* arrivals) {
    split_k<64, 64, 1, 2, false>(a, b, c, m, n, k, arrivals);
}
extern "C" __global__ void __launch_bounds__(128, 4) matmul_split_k_128x64_cuda(const float* a, const float* b,
                                                                                float* c, unsigned m, unsigned n,
                                                                                unsigned k, unsigned* arrivals) {
    split_k<128, 64, 2, 2, false>(a, b, c, m, n, k, arrivals);
}
extern "C" __global__ void __launch_bounds__(128, 4) matmul_split_k_64x128_cuda(const float* a, const float* b,
                                                                                float* c, unsigned m, unsigned n,
                                                                                unsigned k, unsigned* arrivals) {
    split_k<64, 128, 2, 2, false>(a, b, c, m, n, k, arrivals);
}
extern "C" __global__ void __launch_bounds__(128, 2)
    matmul_split_k_multistage_cuda(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k,
                                   unsigned* arrivals) {
    split_k<128, 128, 2, 4, true>(a, b, c, m, n, k, arrivals);
}
extern "C" __global__ void __launch_bounds__(128, 3)
    matmul_split_k_multistage_128x64_cuda(const float* a, const float* b, float* c, unsigned m, unsigned n,
                                          unsigned k, unsigned* arrivals) {
    split_k<128, 64, 2, 2, true>(a, b, c, m, n, k, arrivals);
}
