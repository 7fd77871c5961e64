// kernels::matmul::small_m: C = A·B for A of a few rows. A block takes a strip of 32·W columns of B
// (a 16-byte load per lane per row) and block z's run of k (multiples of 32); its eight warps take
// the run's rows four at a time, loading the next four (and A's values at them) before multiplying
// the current ones; each lane keeps MR × W sums (MR rows of A, read as 16- or 8-byte broadcasts).
// The warps' sums meet in shared memory (halving, in warp order); the runs' meet in C (k_runs.cuh).
// Rows of A past MR go to further blocks (grid x, the row group fastest). The operand type O says
// how A and B are read: f32 as given, f32 cut to TF32, or bf16.
#pragma once

#include "k_runs.cuh"

#define SMALL_M_WARPS 8
#define SMALL_M_THREADS (32 * SMALL_M_WARPS)
#define SMALL_M_STEP 4
#define SMALL_M_BLOCK_STEP (SMALL_M_WARPS * SMALL_M_STEP)

struct F32Operands {
    typedef float E;
    static __device__ __forceinline__ float widen(const unsigned (&raw)[4], unsigned q) {
        return __uint_as_float(raw[q]);
    }
    static __device__ __forceinline__ void place(unsigned (&raw)[4], unsigned q, E x) { raw[q] = __float_as_uint(x); }
    static __device__ __forceinline__ float value(E x) { return x; }
    static __device__ __forceinline__ void four(const E* p, float (&out)[4]) {
        float4 v = *(const float4*)p;
        out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
    }
};

struct Tf32Operands {
    typedef float E;
    static __device__ __forceinline__ float cut(unsigned bits) { return __uint_as_float(bits & ~0x1fffu); }
    static __device__ __forceinline__ float widen(const unsigned (&raw)[4], unsigned q) { return cut(raw[q]); }
    static __device__ __forceinline__ void place(unsigned (&raw)[4], unsigned q, E x) { raw[q] = __float_as_uint(x); }
    static __device__ __forceinline__ float value(E x) { return cut(__float_as_uint(x)); }
    static __device__ __forceinline__ void four(const E* p, float (&out)[4]) {
        float4 v = *(const float4*)p;
        out[0] = value(v.x), out[1] = value(v.y), out[2] = value(v.z), out[3] = value(v.w);
    }
};

struct Bf16Operands {
    typedef unsigned short E;
    static __device__ __forceinline__ float widen(const unsigned (&raw)[4], unsigned q) {
        unsigned pair = raw[q / 2];
        return __uint_as_float(q % 2 == 0 ? pair << 16 : pair & 0xffff0000u);
    }
    static __device__ __forceinline__ void place(unsigned (&raw)[4], unsigned q, E x) {
        raw[q / 2] |= (unsigned)x << (16 * (q % 2));
    }
    static __device__ __forceinline__ float value(E x) { return __uint_as_float((unsigned)x << 16); }
    static __device__ __forceinline__ void four(const E* p, float (&out)[4]) {
        unsigned long long pairs = *(const unsigned long long*)p;
#pragma unroll
        for (unsigned u = 0; u < 4; ++u) out[u] = value((E)(pairs >> (16 * u)));
    }
};

template <class O, unsigned W>
__device__ __forceinline__ void small_m_row_of_b(const typename O::E* b, unsigned n, unsigned row, unsigned col,
                                                 bool vector, unsigned (&raw)[4]) {
#pragma unroll
    for (unsigned i = 0; i < 4; ++i) raw[i] = 0;
    if (vector) {
        if (col < n) {
            uint4 v = *(const uint4*)(b + (row * n + col));
            raw[0] = v.x, raw[1] = v.y, raw[2] = v.z, raw[3] = v.w;
        }
    } else {
#pragma unroll
        for (unsigned q = 0; q < W; ++q)
            if (col + q < n) O::place(raw, q, b[row * n + col + q]);
    }
}

template <class O>
__device__ __forceinline__ void small_m_four_of_a(const typename O::E* a, unsigned k, unsigned row, unsigned kk,
                                                  unsigned end, bool vector, float (&out)[4]) {
    unsigned at = row * k + kk;
    if (vector) {
        O::four(a + at, out);
        return;
    }
#pragma unroll
    for (unsigned u = 0; u < 4; ++u) out[u] = kk + u < end ? O::value(a[at + u]) : 0.0f;
}

// This warp's sums over its rows of the run begin..end (VECTOR: every row of B whole 16-byte loads,
// every four of A one load, no step past the run's end).
template <class O, unsigned MR, unsigned W, bool VECTOR>
__device__ __forceinline__ void small_m_stream(const typename O::E* a, const typename O::E* b, unsigned m, unsigned n,
                                               unsigned k, unsigned begin, unsigned end, unsigned row0, unsigned col,
                                               unsigned warp, float (&acc)[MR][W]) {
    // A step's operands, both a step ahead of their use: four rows of B at this lane's columns, and
    // A's values at those four k in each of the MR rows (zeros past m).
    unsigned next[SMALL_M_STEP][4] = {};
    float next_a[MR][4] = {};
    auto step_at = [&](unsigned kk) {
#pragma unroll
        for (unsigned u = 0; u < SMALL_M_STEP; ++u) {
            if (VECTOR || kk + u < end) {
                small_m_row_of_b<O, W>(b, n, kk + u, col, VECTOR, next[u]);
            } else {
#pragma unroll
                for (unsigned i = 0; i < 4; ++i) next[u][i] = 0;
            }
        }
#pragma unroll
        for (unsigned r = 0; r < MR; ++r) {
            if (row0 + r < m) {
                small_m_four_of_a<O>(a, k, row0 + r, kk, end, VECTOR, next_a[r]);
            } else {
#pragma unroll
                for (unsigned u = 0; u < 4; ++u) next_a[r][u] = 0.0f;
            }
        }
    };
    unsigned kk = begin + warp * SMALL_M_STEP;
    if (kk < end) step_at(kk);
    while (kk < end) {
        unsigned rows[SMALL_M_STEP][4];
        float fours[MR][4];
#pragma unroll
        for (unsigned u = 0; u < SMALL_M_STEP; ++u)
#pragma unroll
            for (unsigned i = 0; i < 4; ++i) rows[u][i] = next[u][i];
#pragma unroll
        for (unsigned r = 0; r < MR; ++r)
#pragma unroll
            for (unsigned u = 0; u < 4; ++u) fours[r][u] = next_a[r][u];
        unsigned after = kk + SMALL_M_BLOCK_STEP;
        if (after < end) step_at(after);
#pragma unroll
        for (unsigned r = 0; r < MR; ++r)
#pragma unroll
            for (unsigned u = 0; u < SMALL_M_STEP; ++u)
#pragma unroll
                for (unsigned q = 0; q < W; ++q) acc[r][q] = fmaf(fours[r][u], O::widen(rows[u], q), acc[r][q]);
        kk = after;
    }
}

// The warps' sums meet in warp 0 (the upper half stores, the lower half adds, halving, in shared
// memory); the runs' meet in C (k_runs.cuh).
template <unsigned MR, unsigned W>
__device__ __forceinline__ void small_m_finish(float (&acc)[MR][W], float* c, unsigned m, unsigned n, unsigned row0,
                                               unsigned col, unsigned warp, unsigned runs, unsigned* arrivals) {
    unsigned lane = threadIdx.x % 32;
    extern __shared__ float partials[];
    for (unsigned half = SMALL_M_WARPS / 2; half > 0; half /= 2) {
        if (warp >= half && warp < 2 * half) {
#pragma unroll
            for (unsigned r = 0; r < MR; ++r)
#pragma unroll
                for (unsigned q = 0; q < W; ++q) partials[(((warp - half) * MR + r) * W + q) * 32 + lane] = acc[r][q];
        }
        __syncthreads();
        if (warp < half) {
#pragma unroll
            for (unsigned r = 0; r < MR; ++r)
#pragma unroll
                for (unsigned q = 0; q < W; ++q) acc[r][q] += partials[((warp * MR + r) * W + q) * 32 + lane];
        }
        __syncthreads();
    }

    auto each_output = [&](auto out) {
        if (warp != 0) return;
#pragma unroll
        for (unsigned r = 0; r < MR; ++r)
#pragma unroll
            for (unsigned q = 0; q < W; ++q)
                if (row0 + r < m && col + q < n) out(c + (row0 + r) * n + col + q, acc[r][q]);
    };
    meet_in_c(
        arrivals, runs, [&] { each_output([](float* at, float value) { *at = value; }); },
        [&] { each_output(red_add); });
}

template <class O, unsigned MR, unsigned W>
__device__ __forceinline__ void small_m(const typename O::E* a, const typename O::E* b, float* c, unsigned m,
                                        unsigned n, unsigned k, unsigned* arrivals) {
    KRun run = run_of_k<SMALL_M_BLOCK_STEP>(k);
    if (run.begin == run.end) return;
    unsigned begin = run.begin, end = run.end;
    bool vector = k % 4 == 0 && n % W == 0 && ((unsigned long long)a % (4 * sizeof(typename O::E))) == 0 &&
                  ((unsigned long long)b & 15) == 0;
    unsigned groups = (m + MR - 1) / MR;
    unsigned row0 = (blockIdx.x % groups) * MR;
    unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    unsigned col = (blockIdx.x / groups) * 32 * W + lane * W;

    // Two loops, so that the 16-byte one carries no test of the path.
    float acc[MR][W] = {};
    if (vector)
        small_m_stream<O, MR, W, true>(a, b, m, n, k, begin, end, row0, col, warp, acc);
    else
        small_m_stream<O, MR, W, false>(a, b, m, n, k, begin, end, row0, col, warp, acc);

    small_m_finish<MR, W>(acc, c, m, n, row0, col, warp, run.runs, arrivals);
}
