// kernels::matmul::small_m_mma: C = A·B for A of up to 16 rows on the tensor cores, A's rows the
// 16-row side of mma.sync m16n8k8 (TF32), B streamed once. A block takes a strip of
// 256 columns (eight warps side by side, four 8-column tiles each) and block z's run of k; each
// lane loads its fragments of B straight from global memory (a TF32 register one element) and A's (rows lane / 4 and 8 more),
// the next two mma steps while the current two multiply. The runs meet in C (k_runs.cuh). Rows
// of A past 16 go to further blocks (grid x, the row group fastest).
#pragma once

#include "k_runs.cuh"
#include "mma_sync.cuh"

#define SMALL_M_MMA_WARPS 8
#define SMALL_M_MMA_THREADS (32 * SMALL_M_MMA_WARPS)
#define SMALL_M_MMA_TILES 4
#define SMALL_M_MMA_COLUMNS (SMALL_M_MMA_WARPS * SMALL_M_MMA_TILES * 8)
#define SMALL_M_MMA_STEPS 2

struct Tf32Mma {
    typedef float E;
    static constexpr unsigned K = 8, PER_REGISTER = 1;
    static __device__ __forceinline__ unsigned bits(E x, unsigned) { return __float_as_uint(x); }
    // Fragment positions as kernels::device::mma lists them.
    static __device__ __forceinline__ void a_position(unsigned lane, unsigned r, unsigned, unsigned& row,
                                                      unsigned& col) {
        row = lane / 4 + 8 * (r % 2), col = lane % 4 + 4 * (r / 2);
    }
    static __device__ __forceinline__ void b_position(unsigned lane, unsigned r, unsigned, unsigned& row,
                                                      unsigned& col) {
        row = lane % 4 + 4 * r, col = lane / 4;
    }
    static __device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
        asm volatile(
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

template <class O>
struct SmallMmaChunk {
    unsigned a[SMALL_M_MMA_STEPS][4];
    unsigned b[SMALL_M_MMA_STEPS][SMALL_M_MMA_TILES][2];
};

// This lane's fragments of the chunk from kk: zeros past `end` where TAIL, past m and past n.
template <class O, bool TAIL>
__device__ __forceinline__ void small_m_mma_chunk(const typename O::E* a, const typename O::E* b, unsigned n,
                                                  unsigned k, unsigned kk, unsigned end, unsigned row0,
                                                  unsigned col0, const bool (&rows_in)[2],
                                                  const bool (&cols_in)[SMALL_M_MMA_TILES], SmallMmaChunk<O>& f) {
    unsigned lane = threadIdx.x % 32;
#pragma unroll
    for (unsigned s = 0; s < SMALL_M_MMA_STEPS; ++s) {
#pragma unroll
        for (unsigned r = 0; r < 4; ++r) {
            f.a[s][r] = 0;
#pragma unroll
            for (unsigned e = 0; e < O::PER_REGISTER; ++e) {
                unsigned row, col;
                O::a_position(lane, r, e, row, col);
                unsigned at = kk + s * O::K + col;
                if (rows_in[r % 2] && (!TAIL || at < end))
                    f.a[s][r] |= O::bits(a[(size_t)(row0 + row) * k + at], e);
            }
        }
#pragma unroll
        for (unsigned r = 0; r < 2; ++r) {
#pragma unroll
            for (unsigned t = 0; t < SMALL_M_MMA_TILES; ++t) f.b[s][t][r] = 0;
#pragma unroll
            for (unsigned e = 0; e < O::PER_REGISTER; ++e) {
                unsigned row, col;
                O::b_position(lane, r, e, row, col);
                unsigned at = kk + s * O::K + row;
                if (!TAIL || at < end) {
                    size_t line = (size_t)at * n + col0 + col;
#pragma unroll
                    for (unsigned t = 0; t < SMALL_M_MMA_TILES; ++t)
                        if (cols_in[t]) f.b[s][t][r] |= O::bits(b[line + 8 * t], e);
                }
            }
        }
    }
}

template <class O>
__device__ __forceinline__ void small_m_mma_multiply(float (&acc)[SMALL_M_MMA_TILES][4], const SmallMmaChunk<O>& f) {
#pragma unroll
    for (unsigned s = 0; s < SMALL_M_MMA_STEPS; ++s)
#pragma unroll
        for (unsigned t = 0; t < SMALL_M_MMA_TILES; ++t) O::mma(acc[t], f.a[s], f.b[s][t]);
}

template <class O>
__device__ __forceinline__ void small_m_mma(const typename O::E* a, const typename O::E* b, float* c, unsigned m,
                                            unsigned n, unsigned k, unsigned* arrivals) {
    constexpr unsigned CHUNK = SMALL_M_MMA_STEPS * O::K;
    KRun run = run_of_k<CHUNK>(k);
    if (run.begin == run.end) return;
    unsigned begin = run.begin, end = run.end;
    unsigned lane = threadIdx.x % 32;
    unsigned groups = (m + 15) / 16;
    unsigned row0 = (blockIdx.x % groups) * 16;
    unsigned col0 = (blockIdx.x / groups) * SMALL_M_MMA_COLUMNS + (threadIdx.x / 32) * SMALL_M_MMA_TILES * 8;
    bool rows_in[2] = {row0 + lane / 4 < m, row0 + lane / 4 + 8 < m};
    bool cols_in[SMALL_M_MMA_TILES];
#pragma unroll
    for (unsigned t = 0; t < SMALL_M_MMA_TILES; ++t) cols_in[t] = col0 + 8 * t + lane / 4 < n;
    float acc[SMALL_M_MMA_TILES][4] = {};
    unsigned whole_end = begin + (end - begin) / CHUNK * CHUNK;
    unsigned kk = begin;
    if (kk < whole_end) {
        SmallMmaChunk<O> current, next;
        small_m_mma_chunk<O, false>(a, b, n, k, kk, end, row0, col0, rows_in, cols_in, current);
        while (kk + CHUNK < whole_end) {
            small_m_mma_chunk<O, false>(a, b, n, k, kk + CHUNK, end, row0, col0, rows_in, cols_in, next);
            small_m_mma_multiply<O>(acc, current);
            current = next;
            kk += CHUNK;
        }
        small_m_mma_multiply<O>(acc, current);
        kk += CHUNK;
    }
    if (kk < end) {
        SmallMmaChunk<O> tail;
        small_m_mma_chunk<O, true>(a, b, n, k, kk, end, row0, col0, rows_in, cols_in, tail);
        small_m_mma_multiply<O>(acc, tail);
    }
    auto each_output = [&](auto out) {
#pragma unroll
        for (unsigned t = 0; t < SMALL_M_MMA_TILES; ++t)
#pragma unroll
            for (unsigned r = 0; r < 4; ++r) {
                unsigned row = row0 + lane / 4 + 8 * (r / 2), col = col0 + 8 * t + 2 * (lane % 4) + r % 2;
                if (row < m && col < n) out(&c[(size_t)row * n + col], acc[t][r]);
            }
    };
    meet_in_c(
        arrivals, run.runs, [&] { each_output([](float* at, float v) { *at = v; }); },
        [&] { each_output([](float* at, float v) { red_add(at, v); }); });
}
