// kernels::matmul::split_k: the warp-tiled product (matmul_warp_tiled.cuh) over block z's run of k;
// run 0 stores its tile into C and signals the tile's counter in `arrivals`, the other runs wait
// for it, add theirs with red.global.add.f32, and the last resets the counter; at the Rust kernel's
// three configurations. The additions are written as `red` (what the Rust kernel's `red_add`
// emits): with atomicAdd, nvcc 13 emitted `atom.global.add.f32` here, which ptxas kept as ATOMG
// (each waiting for its old value) where the form without the counter got REDG, and the twin ran
// slower (docs/perf-log.md, change 95).
#include "matmul_warp_tiled.cuh"

template <unsigned BM, unsigned BN, unsigned RI, unsigned RJ>
__device__ __forceinline__ void split_k(const float* a, const float* b, float* c, unsigned m, unsigned n,
                                        unsigned k, unsigned* arrivals) {
    using W = WarpTiled<BM, BN, RI, RJ>;
    float acc[RI][RJ][4][4] = {};
    unsigned chunk = ((k + gridDim.z - 1) / gridDim.z + WT_BK - 1) / WT_BK * WT_BK;
    unsigned long long begin_wide = (unsigned long long)blockIdx.z * chunk;
    unsigned begin = begin_wide < k ? (unsigned)begin_wide : k;
    unsigned end = begin + chunk < begin || begin + chunk > k ? k : begin + chunk;
    unsigned runs = (k + chunk - 1) / chunk;
    if (begin == end) return;
    bool vector = k % 4 == 0 && n % 4 == 0 && ((unsigned long long)a & 15) == 0 && ((unsigned long long)b & 15) == 0;
    bool wide_store = n % 4 == 0 && ((unsigned long long)c & 15) == 0;
    W::template products<true>(a, b, m, n, k, begin, end, vector, acc);
    if (runs == 1) {
        W::store_tile(c, m, n, acc, wide_store);
        return;
    }
    unsigned* arrived = arrivals + blockIdx.y * gridDim.x + blockIdx.x;
    if (blockIdx.z == 0) {
        W::store_tile(c, m, n, acc, wide_store);
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0) atomicAdd(arrived, 1u);
        return;
    }
    if (threadIdx.x == 0) {
        unsigned seen;
        do asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(arrived) : "memory");
        while (seen == 0);
    }
    __syncthreads();
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
                        asm volatile("red.global.add.f32 [%0], %1;" ::"l"(c + global_row * n + global_col),
                                     "f"(acc[i][j][r][q])
                                     : "memory");
                }
        }
    if (threadIdx.x == 0 && atomicAdd(arrived, 1u) == runs - 1) asm volatile("st.relaxed.gpu.global.u32 [%0], 0;" ::"l"(arrived) : "memory");
}

extern "C" __global__ void __launch_bounds__(128, 4) matmul_split_k_cuda(const float* a, const float* b, float* c,
                                                                         unsigned m, unsigned n, unsigned k, unsigned* arrivals) {
    split_k<64, 64, 1, 2>(a, b, c, m, n, k, arrivals);
}
extern "C" __global__ void __launch_bounds__(128, 4) matmul_split_k_128x64_cuda(const float* a, const float* b,
                                                                                float* c, unsigned m, unsigned n,
                                                                                unsigned k, unsigned* arrivals) {
    split_k<128, 64, 2, 2>(a, b, c, m, n, k, arrivals);
}
extern "C" __global__ void __launch_bounds__(128, 4) matmul_split_k_64x128_cuda(const float* a, const float* b,
                                                                                float* c, unsigned m, unsigned n,
                                                                                unsigned k, unsigned* arrivals) {
    split_k<64, 128, 2, 2>(a, b, c, m, n, k, arrivals);
}
