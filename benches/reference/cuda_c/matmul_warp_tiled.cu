// C = A·B with warp tiling and register-prefetched double buffering (kernels::matmul::warp_tiled),
// at the Rust kernel's configurations: a BM×BN tile per block, (32·RI)×(16·RJ) per warp,
// each lane RI×RJ blocks of 4×4 (rows 32 apart, columns 16 apart); the next step's float4s of A and
// B loaded into registers before the multiply and stored into the other pair of slices after it.
#define WT_BK 8u
#define WT_MAX_FOURS 2u

template <unsigned BM, unsigned BN, unsigned RI, unsigned RJ>
struct WarpTiled {
    static constexpr unsigned WM = 32 * RI, WN = 16 * RJ;
    static constexpr unsigned THREADS = (BM / WM) * (BN / WN) * 32;
    static constexpr unsigned A_PITCH = BM + 4;
    static constexpr unsigned SLICE_FLOATS = WT_BK * A_PITCH + WT_BK * BN;
    static constexpr unsigned A_FOURS = BM * WT_BK / 4 / THREADS, B_FOURS = WT_BK * BN / 4 / THREADS;
    static_assert(A_FOURS >= 1 && A_FOURS <= WT_MAX_FOURS && B_FOURS >= 1 && B_FOURS <= WT_MAX_FOURS, "fours");

    static __device__ __forceinline__ void prefetch(const float* a, const float* b, unsigned m, unsigned n, unsigned k,
                                                    unsigned k0, float4 a_four[A_FOURS], float4 b_four[B_FOURS]) {
        unsigned tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
#pragma unroll
        for (unsigned r = 0; r < A_FOURS; ++r) {
            unsigned i = threadIdx.x + THREADS * r, row = i / (WT_BK / 4), kk = 4 * (i % (WT_BK / 4));
            unsigned global_row = tile_row + row, global_k = k0 + kk;
            a_four[r] = (global_row < m && global_k < k) ? *(const float4*)(a + global_row * k + global_k)
                                                         : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (unsigned r = 0; r < B_FOURS; ++r) {
            unsigned i = threadIdx.x + THREADS * r, kb = i / (BN / 4), col = 4 * (i % (BN / 4));
            unsigned global_kb = k0 + kb, global_col = tile_col + col;
            b_four[r] = (global_kb < k && global_col < n) ? *(const float4*)(b + global_kb * n + global_col)
                                                         : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
    }

    static __device__ __forceinline__ void store_prefetched(float* slices, const float4 a_four[A_FOURS],
                                                            const float4 b_four[B_FOURS]) {
        float* a_slice = slices;
        float* b_slice = slices + WT_BK * A_PITCH;
#pragma unroll
        for (unsigned r = 0; r < A_FOURS; ++r) {
            unsigned i = threadIdx.x + THREADS * r, row = i / (WT_BK / 4), kk = 4 * (i % (WT_BK / 4));
            a_slice[(kk + 0) * A_PITCH + row] = a_four[r].x;
            a_slice[(kk + 1) * A_PITCH + row] = a_four[r].y;
            a_slice[(kk + 2) * A_PITCH + row] = a_four[r].z;
            a_slice[(kk + 3) * A_PITCH + row] = a_four[r].w;
        }
#pragma unroll
        for (unsigned r = 0; r < B_FOURS; ++r) {
            unsigned i = threadIdx.x + THREADS * r;
            *(float4*)(b_slice + (i / (BN / 4)) * BN + 4 * (i % (BN / 4))) = b_four[r];
        }
    }

    static __device__ __forceinline__ void stage_scalar(float* slices, const float* a, const float* b, unsigned m,
                                                        unsigned n, unsigned k, unsigned k0) {
        float* a_slice = slices;
        float* b_slice = slices + WT_BK * A_PITCH;
        unsigned tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
#pragma unroll
        for (unsigned r = 0; r < BM * WT_BK / THREADS; ++r) {
            unsigned i = threadIdx.x + THREADS * r, row = i / WT_BK, kk = i % WT_BK;
            unsigned global_row = tile_row + row, global_k = k0 + kk;
            a_slice[kk * A_PITCH + row] = (global_row < m && global_k < k) ? a[global_row * k + global_k] : 0.0f;
        }
#pragma unroll
        for (unsigned r = 0; r < WT_BK * BN / THREADS; ++r) {
            unsigned i = threadIdx.x + THREADS * r, kk = i / BN, col = i % BN;
            unsigned global_k = k0 + kk, global_col = tile_col + col;
            b_slice[kk * BN + col] = (global_k < k && global_col < n) ? b[global_k * n + global_col] : 0.0f;
        }
    }

    static __device__ __forceinline__ void run(const float* a, const float* b, float* c, unsigned m, unsigned n,
                                               unsigned k) {
        // a0, b0, a1, b1, as kernels::matmul::warp_tiled carves them; the pair chosen by offset
        // (an array of pointers indexed at run time would go to local memory).
        extern __shared__ __align__(16) float shared[];
        unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        unsigned row0 = warp / (BN / WN) * WM + lane / 4 * 4;
        unsigned col0 = warp % (BN / WN) * WN + lane % 4 * 4;
        bool vector = k % 4 == 0 && n % 4 == 0 && ((unsigned long long)a & 15) == 0 &&
                      ((unsigned long long)b & 15) == 0 && ((unsigned long long)c & 15) == 0;
        unsigned steps = (k + WT_BK - 1) / WT_BK;
        float acc[RI][RJ][4][4] = {};
        if (vector) {
            float4 a_four[A_FOURS], b_four[B_FOURS];
            prefetch(a, b, m, n, k, 0, a_four, b_four);
            store_prefetched(shared, a_four, b_four);
        } else {
            stage_scalar(shared, a, b, m, n, k, 0);
        }
        __syncthreads();
        for (unsigned step = 0; step < steps; ++step) {
            bool next = step + 1 < steps;
            float4 a_four[A_FOURS], b_four[B_FOURS];
            if (vector && next) prefetch(a, b, m, n, k, (step + 1) * WT_BK, a_four, b_four);
            const float* a_slice = shared + (step % 2) * SLICE_FLOATS;
            const float* b_slice = a_slice + WT_BK * A_PITCH;
#pragma unroll 1
            for (unsigned kk = 0; kk < WT_BK; ++kk) {
                float4 column[RI], row[RJ];
#pragma unroll
                for (unsigned i = 0; i < RI; ++i) column[i] = *(const float4*)(a_slice + kk * A_PITCH + row0 + 32 * i);
#pragma unroll
                for (unsigned j = 0; j < RJ; ++j) row[j] = *(const float4*)(b_slice + kk * BN + col0 + 16 * j);
                // One element of A against all of B's before the next, as the Rust kernel.
#pragma unroll
                for (unsigned i = 0; i < RI; ++i) {
                    const float cv[4] = {column[i].x, column[i].y, column[i].z, column[i].w};
#pragma unroll
                    for (unsigned r = 0; r < 4; ++r)
#pragma unroll
                        for (unsigned j = 0; j < RJ; ++j) {
                            const float rv[4] = {row[j].x, row[j].y, row[j].z, row[j].w};
#pragma unroll
                            for (unsigned q = 0; q < 4; ++q) acc[i][j][r][q] = fmaf(cv[r], rv[q], acc[i][j][r][q]);
                        }
                }
            }
            float* next_slices = shared + ((step + 1) % 2) * SLICE_FLOATS;
            if (vector && next)
                store_prefetched(next_slices, a_four, b_four);
            else if (next)
                stage_scalar(next_slices, a, b, m, n, k, (step + 1) * WT_BK);
            __syncthreads();
        }
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
};

extern "C" __global__ void __launch_bounds__(256, 2) matmul_warp_tiled_cuda(const float* a, const float* b, float* c,
                                                                            unsigned m, unsigned n, unsigned k) {
    WarpTiled<128, 128, 2, 2>::run(a, b, c, m, n, k);
}
extern "C" __global__ void __launch_bounds__(128, 4) matmul_warp_tiled_128x64_cuda(const float* a, const float* b,
                                                                                   float* c, unsigned m, unsigned n,
                                                                                   unsigned k) {
    WarpTiled<128, 64, 2, 2>::run(a, b, c, m, n, k);
}
extern "C" __global__ void __launch_bounds__(128, 4) matmul_warp_tiled_64x64_cuda(const float* a, const float* b,
                                                                                  float* c, unsigned m, unsigned n,
                                                                                  unsigned k) {
    WarpTiled<64, 64, 1, 2>::run(a, b, c, m, n, k);
}
extern "C" __global__ void __launch_bounds__(256, 1) matmul_warp_tiled_128x256_wide_cuda(const float* a, const float* b,
                                                                                   float* c, unsigned m, unsigned n,
                                                                                   unsigned k) {
    WarpTiled<128, 256, 2, 4>::run(a, b, c, m, n, k);
}
extern "C" __global__ void __launch_bounds__(128, 2) matmul_warp_tiled_128x128_wide_cuda(const float* a,
                                                                                        const float* b, float* c,
                                                                                        unsigned m, unsigned n,
                                                                                        unsigned k) {
    WarpTiled<128, 128, 2, 4>::run(a, b, c, m, n, k);
}
