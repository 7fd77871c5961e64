// kernels::matmul_bf16::small_m16: the bf16 ladder's tensor-core rung for A of up to 16 rows, A's
// rows the 16-row side of mma.sync m16n8k16, B streamed once 16 bytes a load. Each lane loads
// eight columns of B from each of its four rows of a step of k (2·(lane % 4) and 1, 8, 9 more)
// and packs the halves of two rows into the B register of tile j (column j of its eight), so tile
// j's column q is the warp's column 8q + j and a lane's sums are sixteen consecutive columns of
// two rows. A block takes a strip of 512 columns (eight warps of 64) and block z's run of k; each
// warp's runs meet in C on a counter of their own (k_runs.cuh). Rows of A past 16 go to further
// blocks (grid x, the row group fastest).
#include "k_runs.cuh"
#include "mma_sync.cuh"

#define SM16_WARPS 8
#define SM16_THREADS (32 * SM16_WARPS)
#define SM16_WARP_COLUMNS 64
#define SM16_COLUMNS (SM16_WARPS * SM16_WARP_COLUMNS)
#define SM16_STEPS 4
#define SM16_CHUNK (16 * SM16_STEPS)
#define SM16_TILES 8

struct Sm16Chunk {
    unsigned a[SM16_STEPS][4];
    uint4 b[SM16_STEPS][4];
};

// This lane's chunk from kk: zeros past `end` where TAIL, past m and past n. VECTOR: 16-byte loads
// of B (n a multiple of 8, B 16-byte aligned) and 4-byte loads of A (k even, A 4-byte aligned).
template <bool VECTOR, bool TAIL>
__device__ __forceinline__ void sm16_chunk(const unsigned short* a, const unsigned short* b, unsigned m, unsigned n,
                                           unsigned k, unsigned end, unsigned row0, unsigned col, unsigned kk,
                                           Sm16Chunk& f) {
    unsigned lane = threadIdx.x % 32, group = lane / 4, member = lane % 4;
#pragma unroll
    for (unsigned s = 0; s < SM16_STEPS; ++s) {
        unsigned step = kk + 16 * s + 2 * member;
#pragma unroll
        for (unsigned r = 0; r < 4; ++r) {
            unsigned row = row0 + group + 8 * (r % 2), at = step + 8 * (r / 2);
            f.a[s][r] = 0;
            if (row >= m) continue;
            const unsigned short* first = a + (size_t)row * k + at;
            if (VECTOR) {
                if (!TAIL || at < end) f.a[s][r] = *(const unsigned*)first;
            } else {
#pragma unroll
                for (unsigned e = 0; e < 2; ++e)
                    if (!TAIL || at + e < end) f.a[s][r] |= (unsigned)first[e] << (16 * e);
            }
        }
#pragma unroll
        for (unsigned i = 0; i < 4; ++i) {
            unsigned row = step + i % 2 + 8 * (i / 2);  // 0, 1, 8, 9
            f.b[s][i] = make_uint4(0, 0, 0, 0);
            if (TAIL && row >= end) continue;
            const unsigned short* first = b + (size_t)row * n + col;
            if (VECTOR) {
                if (col < n) f.b[s][i] = *(const uint4*)first;
            } else {
                unsigned w[4] = {0, 0, 0, 0};
#pragma unroll
                for (unsigned q = 0; q < 8; ++q)
                    if (col + q < n) w[q / 2] |= (unsigned)first[q] << (16 * (q % 2));
                f.b[s][i] = make_uint4(w[0], w[1], w[2], w[3]);
            }
        }
    }
}

__device__ __forceinline__ unsigned sm16_word(uint4 v, unsigned i) {
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// Column j of the lane's eight from two rows of B, `low` (the lower row of k) in the low half.
__device__ __forceinline__ unsigned sm16_packed(uint4 low, uint4 high, unsigned j) {
    unsigned l = sm16_word(low, j / 2), h = sm16_word(high, j / 2);
    return j % 2 == 0 ? (l & 0xffffu) | (h << 16) : (l >> 16) | (h & 0xffff0000u);
}

__device__ __forceinline__ void sm16_multiply(float (&acc)[SM16_TILES][4], const Sm16Chunk& f) {
#pragma unroll
    for (unsigned s = 0; s < SM16_STEPS; ++s)
#pragma unroll
        for (unsigned j = 0; j < SM16_TILES; ++j)
            mma_bf16(acc[j], f.a[s], sm16_packed(f.b[s][0], f.b[s][1], j), sm16_packed(f.b[s][2], f.b[s][3], j));
}

template <bool VECTOR>
__device__ __forceinline__ void sm16_stream(const unsigned short* a, const unsigned short* b, unsigned m, unsigned n,
                                            unsigned k, unsigned begin, unsigned end, unsigned row0, unsigned col,
                                            float (&acc)[SM16_TILES][4]) {
    unsigned whole_end = begin + (end - begin) / SM16_CHUNK * SM16_CHUNK;
    unsigned kk = begin;
    if (kk < whole_end) {
        Sm16Chunk current, next;
        sm16_chunk<VECTOR, false>(a, b, m, n, k, end, row0, col, kk, current);
        while (kk + SM16_CHUNK < whole_end) {
            sm16_chunk<VECTOR, false>(a, b, m, n, k, end, row0, col, kk + SM16_CHUNK, next);
            sm16_multiply(acc, current);
            current = next;
            kk += SM16_CHUNK;
        }
        sm16_multiply(acc, current);
        kk += SM16_CHUNK;
    }
    if (kk < end) {
        Sm16Chunk tail;
        sm16_chunk<VECTOR, true>(a, b, m, n, k, end, row0, col, kk, tail);
        sm16_multiply(acc, tail);
    }
}

extern "C" __global__ void __launch_bounds__(SM16_THREADS, 1)
    matmul_bf16_small_m16_cuda(const unsigned short* a, const unsigned short* b, float* c, unsigned m, unsigned n,
                               unsigned k, const void* maps /* the TMA kernel's; unused here */,
                               unsigned* arrivals) {
    KRun run = run_of_k<SM16_CHUNK>(k);
    if (run.begin == run.end) return;
    unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    unsigned groups = (m + 15) / 16;
    unsigned row0 = (blockIdx.x % groups) * 16;
    unsigned warp_col = (blockIdx.x / groups) * SM16_COLUMNS + warp * SM16_WARP_COLUMNS;
    unsigned col = warp_col + 8 * (lane / 4);
    bool vector = n % 8 == 0 && k % 2 == 0 && (size_t)b % 16 == 0 && (size_t)a % 4 == 0;
    float acc[SM16_TILES][4] = {};
    if (vector)
        sm16_stream<true>(a, b, m, n, k, run.begin, run.end, row0, col, acc);
    else
        sm16_stream<false>(a, b, m, n, k, run.begin, run.end, row0, col, acc);

    // The lane's sixteen columns of rows lane / 4 and 8 more: column p is tile p % 8's 2·(lane % 4) + p / 8.
    unsigned first_col = warp_col + 16 * (lane % 4);
    auto write = [&](bool adding) {
#pragma unroll
        for (unsigned half = 0; half < 2; ++half) {
            unsigned row = row0 + lane / 4 + 8 * half;
            if (row >= m) continue;
            float* line = c + (size_t)row * n + first_col;
#pragma unroll
            for (unsigned q = 0; q < 4; ++q) {
                float four[4];
#pragma unroll
                for (unsigned e = 0; e < 4; ++e) four[e] = acc[(4 * q + e) % 8][2 * half + (4 * q + e) / 8];
                unsigned at = first_col + 4 * q;
                float* first = line + 4 * q;
                if (!adding && at + 3 < n && (size_t)first % 16 == 0) {
                    *(float4*)first = make_float4(four[0], four[1], four[2], four[3]);
                } else {
#pragma unroll
                    for (unsigned e = 0; e < 4; ++e)
                        if (at + e < n) {
                            if (adding)
                                red_add(first + e, four[e]);
                            else
                                first[e] = four[e];
                        }
                }
            }
        }
    };
    unsigned* arrived = arrivals + (size_t)((blockIdx.y * gridDim.x + blockIdx.x) * SM16_WARPS + warp);
    meet_in_c_warp(arrived, blockIdx.z, run.runs, write);
}
