// kernels::matmul::multistage: the wide warp tiles (64×64 per warp, 8×16 outputs per lane) with the
// slices three steps deep in shared memory, copied by cp.async (A's transposed a float at a time,
// B's 16 bytes at a time where n is a multiple of 4 and B aligned, else a float at a time; zeros
// outside A, B and k), each k's fragments read before the previous k's products; empty asm
// statements where the Rust kernel has its compiler barriers. At the Rust kernel's 128×128,
// 128×256 and 128×64 tiles (matmul_multistage.cu), and split-k's runs of k (matmul_split_k.cu).
#pragma once

#include "matmul_warp_tiled.cuh"

#define MS_STAGES 3u

__device__ __forceinline__ void ms_copy4(float* dst, const float* src, bool valid) {
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(s), "l"(src), "r"(valid ? 4u : 0u) : "memory");
}

__device__ __forceinline__ void ms_copy16(float* dst, const float* src, bool valid) {
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(src), "r"(valid ? 16u : 0u)
                 : "memory");
}

template <unsigned BM, unsigned BN, unsigned RI, unsigned RJ>
struct Multistage {
    using W = WarpTiled<BM, BN, RI, RJ>;
    static constexpr unsigned THREADS = W::THREADS, A_PITCH = W::A_PITCH, SLICE_FLOATS = W::SLICE_FLOATS;

    // The step at k0 into the stage at `slices` (a, then b, as the Rust kernel carves them), zeros
    // at k from `end` (the run's).
    static __device__ __forceinline__ void copy_step(float* slices, const float* a, const float* b, unsigned m,
                                                     unsigned n, unsigned k, unsigned end, unsigned k0, bool vector) {
        float* a_slice = slices;
        float* b_slice = slices + WT_BK * A_PITCH;
        unsigned tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
#pragma unroll
        for (unsigned r = 0; r < BM * WT_BK / THREADS; ++r) {
            unsigned i = threadIdx.x + THREADS * r, row = i / WT_BK, kk = i % WT_BK;
            unsigned global_row = tile_row + row, global_k = k0 + kk;
            bool valid = global_row < m && global_k < end;
            ms_copy4(a_slice + kk * A_PITCH + row, valid ? a + global_row * k + global_k : a, valid);
        }
        if (vector) {
#pragma unroll
            for (unsigned r = 0; r < WT_BK * BN / 4 / THREADS; ++r) {
                unsigned i = threadIdx.x + THREADS * r, kk = i / (BN / 4), col = 4 * (i % (BN / 4));
                unsigned global_k = k0 + kk, global_col = tile_col + col;
                bool valid = global_k < end && global_col < n;
                ms_copy16(b_slice + kk * BN + col, valid ? b + global_k * n + global_col : b, valid);
            }
        } else {
#pragma unroll
            for (unsigned r = 0; r < WT_BK * BN / THREADS; ++r) {
                unsigned i = threadIdx.x + THREADS * r, kk = i / BN, col = i % BN;
                unsigned global_k = k0 + kk, global_col = tile_col + col;
                bool valid = global_k < end && global_col < n;
                ms_copy4(b_slice + kk * BN + col, valid ? b + global_k * n + global_col : b, valid);
            }
        }
    }

    static __device__ __forceinline__ void multiply(const float* slices, unsigned row0, unsigned col0,
                                                    float (&acc)[RI][RJ][4][4]) {
        const float* a_mine = slices + row0;
        const float* b_mine = slices + WT_BK * W::A_PITCH + col0;
        float4 column[RI], row[RJ];
        W::fragments_at(a_mine, b_mine, 0, column, row);
#pragma unroll
        for (unsigned kk = 0; kk < WT_BK; ++kk) {
            float4 next_column[RI], next_row[RJ];
            if (kk + 1 < WT_BK) W::fragments_at(a_mine, b_mine, kk + 1, next_column, next_row);
            asm volatile("" ::: "memory");
            W::template outer_product<true>(column, row, acc);
            asm volatile("" ::: "memory");
            if (kk + 1 < WT_BK) {
#pragma unroll
                for (unsigned i = 0; i < RI; ++i) column[i] = next_column[i];
#pragma unroll
                for (unsigned j = 0; j < RJ; ++j) row[j] = next_row[j];
            }
        }
    }

    // The products over the run begin..end of k, one loop per path (VECTOR: B's 16-byte copies),
    // the stages rotating through three pointers, the steps past the last one copying zeros, as
    // the Rust kernel's `pipeline`.
    template <bool VECTOR>
    static __device__ __forceinline__ void pipeline(const float* a, const float* b, unsigned m, unsigned n,
                                                    unsigned k, unsigned begin, unsigned end, float* shared,
                                                    float (&acc)[RI][RJ][4][4]) {
        float *reading = shared, *next = shared + SLICE_FLOATS, *filling = shared + 2 * SLICE_FLOATS;
        copy_step(reading, a, b, m, n, k, end, begin, VECTOR);
        asm volatile("cp.async.commit_group;" ::: "memory");
        copy_step(next, a, b, m, n, k, end, begin + WT_BK, VECTOR);
        asm volatile("cp.async.commit_group;" ::: "memory");
        unsigned row0, col0;
        W::origin(row0, col0);
        unsigned steps = (end - begin + WT_BK - 1) / WT_BK;
        for (unsigned step = 0; step < steps; ++step) {
            asm volatile("cp.async.wait_group %0;" ::"n"(MS_STAGES - 2) : "memory");
            __syncthreads();
            copy_step(filling, a, b, m, n, k, end, begin + (step + MS_STAGES - 1) * WT_BK, VECTOR);
            asm volatile("cp.async.commit_group;" ::: "memory");
            multiply(reading, row0, col0, acc);
            float* read = reading;
            reading = next;
            next = filling;
            filling = read;
        }
        asm volatile("cp.async.wait_group 0;" ::: "memory");
    }

    // This lane's sums over the run begin..end of k.
    static __device__ __forceinline__ void run_products(const float* a, const float* b, unsigned m, unsigned n,
                                                        unsigned k, unsigned begin, unsigned end,
                                                        float (&acc)[RI][RJ][4][4]) {
        extern __shared__ __align__(16) float shared[];
        if (n % 4 == 0 && ((unsigned long long)b & 15) == 0)
            pipeline<true>(a, b, m, n, k, begin, end, shared, acc);
        else
            pipeline<false>(a, b, m, n, k, begin, end, shared, acc);
    }

    static __device__ __forceinline__ void run(const float* a, const float* b, float* c, unsigned m, unsigned n,
                                               unsigned k) {
        float acc[RI][RJ][4][4] = {};
        run_products(a, b, m, n, k, 0, k, acc);
        W::store_tile(c, m, n, acc, n % 4 == 0 && ((unsigned long long)c & 15) == 0);
    }
};

