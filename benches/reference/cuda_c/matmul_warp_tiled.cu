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
    W::store_tile(c, m, n, acc, vector);
}

extern "C" __global__ void __launch_bounds__(256, 2) matmul_warp_tiled_cuda(const float* a, const float* b, float* c,
                                                                            unsigned m, unsigned n, unsigned k, unsigned* /* arrivals: split-k's */) {
    warp_tiled<128, 128, 2, 2, true>(a, b, c, m, n, k);
}
extern "C" __global__ void __launch_bounds__(128, 4) matmul_warp_tiled_128x64_cuda(const float* a, const float* b,
                                                                                   float* c, unsigned m, unsigned n,
                                                                                   unsigned k, unsigned* /* arrivals: split-k's */) {
    warp_tiled<128, 64, 2, 2, true>(a, b, c, m, n, k);
}
extern "C" __global__ void __launch_bounds__(128, 4) matmul_warp_tiled_64x64_cuda(const float* a, const float* b,
                                                                                  float* c, unsigned m, unsigned n,
                                                                                  unsigned k, unsigned* /* arrivals: split-k's */) {
    warp_tiled<64, 64, 1, 2, true>(a, b, c, m, n, k);
}
extern "C" __global__ void __launch_bounds__(256, 1) matmul_warp_tiled_128x256_wide_cuda(const float* a, const float* b,
                                                                                   float* c, unsigned m, unsigned n,
                                                                                   unsigned k, unsigned* /* arrivals: split-k's */) {
    warp_tiled<128, 256, 2, 4, true>(a, b, c, m, n, k);
}
extern "C" __global__ void __launch_bounds__(128, 2) matmul_warp_tiled_128x128_wide_cuda(const float* a,
                                                                                        const float* b, float* c,
                                                                                        unsigned m, unsigned n,
                                                                                        unsigned k, unsigned* /* arrivals: split-k's */) {
    warp_tiled<128, 128, 2, 4, false>(a, b, c, m, n, k);
}
