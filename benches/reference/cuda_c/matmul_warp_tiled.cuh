// The warp-tiled product (kernels::matmul::warp_tiled), shared by matmul_warp_tiled.cu and
// matmul_split_k.cu: a BM×BN tile per block, (32·RI)×(16·RJ) per warp, each lane RI×RJ blocks of
// 4×4 (rows 32 apart, columns 16 apart); the next step's float4s of A and B (where k and n are
// multiples of 4 and A, B aligned) loaded into registers before the multiply and stored into the
// other pair of slices after it; single floats elsewhere, loaded the same way or staged between
// two steps (`products`' two forms).
#pragma once
#define WT_BK 8u
#define WT_MAX_FOURS 2u

template <unsigned BM, unsigned BN, unsigned RI, unsigned RJ>
struct WarpTiled {
    static constexpr unsigned WM = 32 * RI, WN = 16 * RJ;
    static constexpr unsigned THREADS = (BM / WM) * (BN / WN) * 32;
    static constexpr unsigned A_PITCH = BM + 4;
    static constexpr unsigned SLICE_FLOATS = WT_BK * A_PITCH + WT_BK * BN;
    static constexpr unsigned A_FOURS = BM * WT_BK / 4 / THREADS, B_FOURS = WT_BK * BN / 4 / THREADS;
    static constexpr unsigned A_SCALARS = 4 * A_FOURS, B_SCALARS = 4 * B_FOURS;
    static_assert(A_FOURS >= 1 && A_FOURS <= WT_MAX_FOURS && B_FOURS >= 1 && B_FOURS <= WT_MAX_FOURS, "fours");

    // The 16-byte path: one step's float4s, zeros outside A, B and the run (k ≥ end).
    struct Fours {
        float4 a[A_FOURS], b[B_FOURS];

        __device__ __forceinline__ void fetch(const float* pa, const float* pb, unsigned m, unsigned n, unsigned k,
                                              unsigned end, unsigned k0) {
            unsigned tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
#pragma unroll
            for (unsigned r = 0; r < A_FOURS; ++r) {
                unsigned i = threadIdx.x + THREADS * r, row = i / (WT_BK / 4), kk = 4 * (i % (WT_BK / 4));
                unsigned global_row = tile_row + row, global_k = k0 + kk;
                a[r] = (global_row < m && global_k < end) ? *(const float4*)(pa + global_row * k + global_k)
                                                          : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
            for (unsigned r = 0; r < B_FOURS; ++r) {
                unsigned i = threadIdx.x + THREADS * r, kb = i / (BN / 4), col = 4 * (i % (BN / 4));
                unsigned global_kb = k0 + kb, global_col = tile_col + col;
                b[r] = (global_kb < end && global_col < n) ? *(const float4*)(pb + global_kb * n + global_col)
                                                           : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
        }

        __device__ __forceinline__ void store(float* slices) const {
            float* a_slice = slices;
            float* b_slice = slices + WT_BK * A_PITCH;
#pragma unroll
            for (unsigned r = 0; r < A_FOURS; ++r) {
                unsigned i = threadIdx.x + THREADS * r, row = i / (WT_BK / 4), kk = 4 * (i % (WT_BK / 4));
                a_slice[(kk + 0) * A_PITCH + row] = a[r].x;
                a_slice[(kk + 1) * A_PITCH + row] = a[r].y;
                a_slice[(kk + 2) * A_PITCH + row] = a[r].z;
                a_slice[(kk + 3) * A_PITCH + row] = a[r].w;
            }
#pragma unroll
            for (unsigned r = 0; r < B_FOURS; ++r) {
                unsigned i = threadIdx.x + THREADS * r;
                *(float4*)(b_slice + (i / (BN / 4)) * BN + 4 * (i % (BN / 4))) = b[r];
            }
        }
    };

    // The 4-byte path: one step's elements, zeros outside A, B and the run (any shape).
    struct Scalars {
        float a[A_SCALARS], b[B_SCALARS];

        __device__ __forceinline__ void fetch(const float* pa, const float* pb, unsigned m, unsigned n, unsigned k,
                                              unsigned end, unsigned k0) {
            unsigned tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
#pragma unroll
            for (unsigned r = 0; r < A_SCALARS; ++r) {
                unsigned i = threadIdx.x + THREADS * r, row = i / WT_BK, kk = i % WT_BK;
                unsigned global_row = tile_row + row, global_k = k0 + kk;
                a[r] = (global_row < m && global_k < end) ? pa[global_row * k + global_k] : 0.0f;
            }
#pragma unroll
            for (unsigned r = 0; r < B_SCALARS; ++r) {
                unsigned i = threadIdx.x + THREADS * r, kk = i / BN, col = i % BN;
                unsigned global_k = k0 + kk, global_col = tile_col + col;
                b[r] = (global_k < end && global_col < n) ? pb[global_k * n + global_col] : 0.0f;
            }
        }

        __device__ __forceinline__ void store(float* slices) const {
            float* a_slice = slices;
            float* b_slice = slices + WT_BK * A_PITCH;
#pragma unroll
            for (unsigned r = 0; r < A_SCALARS; ++r) {
                unsigned i = threadIdx.x + THREADS * r;
                a_slice[(i % WT_BK) * A_PITCH + i / WT_BK] = a[r];
            }
#pragma unroll
            for (unsigned r = 0; r < B_SCALARS; ++r) {
                unsigned i = threadIdx.x + THREADS * r;
                b_slice[(i / BN) * BN + i % BN] = b[r];
            }
        }
    };

    static __device__ __forceinline__ void multiply(const float* slices, unsigned row0, unsigned col0,
                                                    float (&acc)[RI][RJ][4][4]) {
#pragma unroll 1
        for (unsigned kk = 0; kk < WT_BK; ++kk) {
            float4 column[RI], row[RJ];
            fragments(slices, kk, row0, col0, column, row);
            outer_product(column, row, acc);
        }
    }

    // One k's fragments of A (4·RI rows) and B (4·RJ columns) from a pair of slices.
    static __device__ __forceinline__ void fragments(const float* slices, unsigned kk, unsigned row0, unsigned col0,
                                                     float4 (&column)[RI], float4 (&row)[RJ]) {
        const float* a_slice = slices;
        const float* b_slice = slices + WT_BK * A_PITCH;
#pragma unroll
        for (unsigned i = 0; i < RI; ++i) column[i] = *(const float4*)(a_slice + kk * A_PITCH + row0 + 32 * i);
#pragma unroll
        for (unsigned j = 0; j < RJ; ++j) row[j] = *(const float4*)(b_slice + kk * BN + col0 + 16 * j);
    }

    // The same from this thread's corners of the slices (`a_mine` = A's slice + row0, `b_mine` =
    // B's + col0), every fragment a constant distance away where kk is one (the Rust multistage
    // 128×64 tile's `SharedMatrix::window`). nvcc folds the offsets into the loads either way: the
    // multistage twins' main loops are as long with `fragments` (1240, 1190 and 678 per step).
    static __device__ __forceinline__ void fragments_at(const float* a_mine, const float* b_mine, unsigned kk,
                                                        float4 (&column)[RI], float4 (&row)[RJ]) {
#pragma unroll
        for (unsigned i = 0; i < RI; ++i) column[i] = *(const float4*)(a_mine + kk * A_PITCH + 32 * i);
#pragma unroll
        for (unsigned j = 0; j < RJ; ++j) row[j] = *(const float4*)(b_mine + kk * BN + 16 * j);
    }

    // acc += column × row: one element of A against all of B's before the next, as the Rust
    // kernel's `outer_product`; SERPENTINE walks B backwards on every other element of A.
    template <bool SERPENTINE = false>
    static __device__ __forceinline__ void outer_product(const float4 (&column)[RI], const float4 (&row)[RJ],
                                                         float (&acc)[RI][RJ][4][4]) {
#pragma unroll
        for (unsigned i = 0; i < RI; ++i) {
            const float cv[4] = {column[i].x, column[i].y, column[i].z, column[i].w};
#pragma unroll
            for (unsigned r = 0; r < 4; ++r) {
                const bool backwards = SERPENTINE && (i * 4 + r) % 2 == 1;
#pragma unroll
                for (unsigned step_j = 0; step_j < RJ; ++step_j) {
                    const unsigned j = backwards ? RJ - 1 - step_j : step_j;
                    const float rv[4] = {row[j].x, row[j].y, row[j].z, row[j].w};
#pragma unroll
                    for (unsigned step_q = 0; step_q < 4; ++step_q) {
                        const unsigned q = backwards ? 3 - step_q : step_q;
                        acc[i][j][r][q] = fmaf(cv[r], rv[q], acc[i][j][r][q]);
                    }
                }
            }
        }
    }

    // The steps from begin to end, each step's elements fetched before the previous step's
    // products and stored after them into the other pair of slices (a0, b0, a1, b1 as the Rust
    // kernel carves them; the pair chosen by offset).
    template <class Staged>
    static __device__ __forceinline__ void pipeline(const float* a, const float* b, unsigned m, unsigned n,
                                                    unsigned k, unsigned begin, unsigned end, unsigned row0,
                                                    unsigned col0, float (&acc)[RI][RJ][4][4]) {
        extern __shared__ __align__(16) float shared[];
        unsigned steps = (end - begin + WT_BK - 1) / WT_BK;
        {
            Staged first;
            first.fetch(a, b, m, n, k, end, begin);
            first.store(shared);
        }
        __syncthreads();
        for (unsigned step = 0; step < steps; ++step) {
            bool next = step + 1 < steps;
            Staged staged;
            if (next) staged.fetch(a, b, m, n, k, end, begin + (step + 1) * WT_BK);
            multiply(shared + (step % 2) * SLICE_FLOATS, row0, col0, acc);
            if (next) staged.store(shared + ((step + 1) % 2) * SLICE_FLOATS);
            __syncthreads();
        }
    }

    // This lane's first row and column in the block's tile.
    static __device__ __forceinline__ void origin(unsigned& row0, unsigned& col0) {
        unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        row0 = warp / (BN / WN) * WM + lane / 4 * 4;
        col0 = warp % (BN / WN) * WN + lane % 4 * 4;
    }

    // The slices of the step at k0 one element at a time, each stored as it arrives (the staged
    // form of the 4-byte path).
    static __device__ __forceinline__ void stage_scalar(float* slices, const float* a, const float* b, unsigned m,
                                                        unsigned n, unsigned k, unsigned end, unsigned k0) {
        float* a_slice = slices;
        float* b_slice = slices + WT_BK * A_PITCH;
        unsigned tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
#pragma unroll
        for (unsigned r = 0; r < A_SCALARS; ++r) {
            unsigned i = threadIdx.x + THREADS * r, row = i / WT_BK, kk = i % WT_BK;
            unsigned global_row = tile_row + row, global_k = k0 + kk;
            a_slice[kk * A_PITCH + row] = (global_row < m && global_k < end) ? a[global_row * k + global_k] : 0.0f;
        }
#pragma unroll
        for (unsigned r = 0; r < B_SCALARS; ++r) {
            unsigned i = threadIdx.x + THREADS * r, kk = i / BN, col = i % BN;
            unsigned global_k = k0 + kk, global_col = tile_col + col;
            b_slice[kk * BN + col] = (global_k < end && global_col < n) ? b[global_k * n + global_col] : 0.0f;
        }
    }

    // The sums over k from begin to end of this lane's outputs: the 16-byte path's loads overlap
    // the products; the 4-byte path's too where OVERLAP_SCALARS (a loop per path), else they are
    // staged between two steps' products (one loop for both paths), as the Rust kernel's forms.
    template <bool OVERLAP_SCALARS>
    static __device__ __forceinline__ void products(const float* a, const float* b, unsigned m, unsigned n,
                                                    unsigned k, unsigned begin, unsigned end, bool vector,
                                                    float (&acc)[RI][RJ][4][4]) {
        unsigned row0, col0;
        origin(row0, col0);
        if (OVERLAP_SCALARS) {
            if (vector)
                pipeline<Fours>(a, b, m, n, k, begin, end, row0, col0, acc);
            else
                pipeline<Scalars>(a, b, m, n, k, begin, end, row0, col0, acc);
            return;
        }
        extern __shared__ __align__(16) float shared[];
        unsigned steps = (end - begin + WT_BK - 1) / WT_BK;
        if (vector) {
            Fours first;
            first.fetch(a, b, m, n, k, end, begin);
            first.store(shared);
        } else {
            stage_scalar(shared, a, b, m, n, k, end, begin);
        }
        __syncthreads();
        for (unsigned step = 0; step < steps; ++step) {
            bool next = step + 1 < steps;
            unsigned k0 = begin + (step + 1) * WT_BK;
            Fours fetched;
            if (vector && next) fetched.fetch(a, b, m, n, k, end, k0);
            multiply(shared + (step % 2) * SLICE_FLOATS, row0, col0, acc);
            float* next_slices = shared + ((step + 1) % 2) * SLICE_FLOATS;
            if (vector && next)
                fetched.store(next_slices);
            else if (next)
                stage_scalar(next_slices, a, b, m, n, k, end, k0);
            __syncthreads();
        }
    }

    // Stores this lane's outputs inside C (m×n): 16 bytes at a time where wide (n a multiple of 4,
    // C aligned), else 4.
    static __device__ __forceinline__ void store_tile(float* c, unsigned m, unsigned n,
                                                      const float (&acc)[RI][RJ][4][4], bool wide) {
        unsigned row0, col0;
        origin(row0, col0);
        unsigned tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
#pragma unroll
        for (unsigned i = 0; i < RI; ++i)
#pragma unroll
            for (unsigned r = 0; r < 4; ++r) {
                unsigned global_row = tile_row + row0 + 32 * i + r;
#pragma unroll
                for (unsigned j = 0; j < RJ; ++j) {
                    unsigned global_col = tile_col + col0 + 16 * j;
                    if (wide) {
                        if (global_row < m && global_col < n)
                            *(float4*)(c + global_row * n + global_col) =
                                make_float4(acc[i][j][r][0], acc[i][j][r][1], acc[i][j][r][2], acc[i][j][r][3]);
                    } else {
#pragma unroll
                        for (unsigned q = 0; q < 4; ++q)
                            if (global_row < m && global_col + q < n)
                                c[global_row * n + global_col + q] = acc[i][j][r][q];
                    }
                }
            }
    }
};
