// Attention's backward pass on mma.sync (kernels::attention::backward), two launches without
// atomics. attention_backward_query: a block per 64 query rows (four warps of 16); each row's
// Δ = Σ dO·O; Q's and dO's tiles staged once and held as A fragments; 64-key tiles streamed through
// a two-slot cp.async ring; a first pass over the keys for each row's lse (log2 units), a second
// for dQ += dS·K/√d with dS = P ∘ (dP − Δ), P = 2^(S − lse), dP = dO·Vᵀ, 32 keys at a time.
// attention_backward_keys: a block per 64 keys of one KV head over every query row of its query
// heads: Sᵀ = K·Qᵀ, Pᵀ rounded to bf16, dV += Pᵀ·dO, dPᵀ = V·dOᵀ, dSᵀ = Pᵀ ∘ (dPᵀ − Δ),
// dK += dSᵀ·Q/√d, 16 query rows at a time. Q, O, dO, dQ are [heads][seq][D] bf16, K, V, dK, dV
// [heads / kv_group][seq][D]; stats holds each row's lse, then its Δ.
#define ROWS 64
#define TILE 64
#define THREADS 128
#define MAX_DIM 128
#define PITCH (MAX_DIM / 2 + 4)

typedef unsigned short bf16;

#include "mma_sync.cuh"

__device__ __forceinline__ float exp2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ float log2_approx(float x) {
    float y;
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ unsigned pack_bf16x2(float low, float high) {
    unsigned packed;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(high), "f"(low));
    return packed;
}

__device__ __forceinline__ float low_of(unsigned pair) { return __uint_as_float(pair << 16); }
__device__ __forceinline__ float high_of(unsigned pair) { return __uint_as_float(pair & 0xffff0000u); }

// Rows first..first + TILE of a [seq][dim] matrix into staged rows at.., D wide, zeros past seq and
// past dim.
template <unsigned D>
__device__ __forceinline__ void stage(unsigned* tiles, const bf16* matrix, unsigned seq, unsigned first, unsigned at,
                                      unsigned dim) {
    unsigned tid = threadIdx.x;
#pragma unroll
    for (unsigned i = 0; i < TILE * D / 8 / THREADS; ++i) {
        unsigned e = tid + i * THREADS, r = e / (D / 8), c = e % (D / 8);
        bool inside = first + r < seq && (dim == D || c * 8 < dim);
        const bf16* src = inside ? matrix + (first + r) * dim + c * 8 : matrix;
        unsigned address = (unsigned)__cvta_generic_to_shared(tiles + (at + r) * PITCH + 4 * c);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(address), "l"(src), "r"(inside ? 16 : 0));
    }
}

__device__ __forceinline__ void lanes(unsigned& a_row, unsigned& a_word, unsigned& k_row, unsigned& k_word) {
    unsigned lane = threadIdx.x % 32;
    a_row = lane % 8 + 8 * ((lane / 8) % 2);
    a_word = 4 * (lane / 16);
    k_row = lane % 8 + 8 * (lane / 16);
    k_word = 4 * ((lane / 8) % 2);
}

// s (two 16x8 tiles) = A (16 rows over D) · the 16 staged rows from b_at.
template <unsigned D>
__device__ __forceinline__ void rows_by_rows(const unsigned* tiles, const unsigned (&a)[MAX_DIM / 16][4], unsigned b_at,
                                             float (&s)[2][4]) {
    unsigned a_row, a_word, k_row, k_word;
    lanes(a_row, a_word, k_row, k_word);
#pragma unroll
    for (unsigned j = 0; j < 2; ++j)
#pragma unroll
        for (unsigned r = 0; r < 4; ++r) s[j][r] = 0.f;
#pragma unroll
    for (unsigned kk = 0; kk < D / 16; ++kk) {
        unsigned pair[4];
        ldmatrix_x4(pair, tiles + (b_at + k_row) * PITCH + 8 * kk + k_word, false);
        mma_bf16(s[0], a[kk], pair[0], pair[1]);
        mma_bf16(s[1], a[kk], pair[2], pair[3]);
    }
}

// As rows_by_rows, the A fragments read from the 16 staged rows at a_at as they are needed.
template <unsigned D>
__device__ __forceinline__ void staged_by_rows(const unsigned* tiles, unsigned a_at, unsigned b_at, float (&s)[2][4]) {
    unsigned a_row, a_word, k_row, k_word;
    lanes(a_row, a_word, k_row, k_word);
#pragma unroll
    for (unsigned j = 0; j < 2; ++j)
#pragma unroll
        for (unsigned r = 0; r < 4; ++r) s[j][r] = 0.f;
#pragma unroll
    for (unsigned kk = 0; kk < D / 16; ++kk) {
        unsigned a[4], pair[4];
        ldmatrix_x4(a, tiles + (a_at + a_row) * PITCH + 8 * kk + a_word, false);
        ldmatrix_x4(pair, tiles + (b_at + k_row) * PITCH + 8 * kk + k_word, false);
        mma_bf16(s[0], a, pair[0], pair[1]);
        mma_bf16(s[1], a, pair[2], pair[3]);
    }
}

// acc += a · (the 16 staged rows from b_at, by ldmatrix.trans).
template <unsigned D>
__device__ __forceinline__ void accumulate(const unsigned* tiles, float (&acc)[MAX_DIM / 8][4], const unsigned (&a)[4],
                                           unsigned b_at) {
    unsigned a_row, a_word, k_row, k_word;
    lanes(a_row, a_word, k_row, k_word);
#pragma unroll
    for (unsigned p = 0; p < D / 16; ++p) {
        unsigned pair[4];
        ldmatrix_x4(pair, tiles + (b_at + a_row) * PITCH + 8 * p + a_word, true);
        mma_bf16(acc[2 * p], a, pair[0], pair[1]);
        mma_bf16(acc[2 * p + 1], a, pair[2], pair[3]);
    }
}

__device__ __forceinline__ void fragment(const float (&x)[2][4], unsigned (&f)[4]) {
    f[0] = pack_bf16x2(x[0][0], x[0][1]);
    f[1] = pack_bf16x2(x[0][2], x[0][3]);
    f[2] = pack_bf16x2(x[1][0], x[1][1]);
    f[3] = pack_bf16x2(x[1][2], x[1][3]);
}

template <unsigned D, bool CAUSAL, bool SAVED = false>
__device__ __forceinline__ void attention_backward_query(const bf16* q, const bf16* k, const bf16* v, const bf16* o,
                                                         const bf16* d_o, bf16* dq, float* stats, unsigned kv_group,
                                                         unsigned seq, unsigned dim = D) {
    extern __shared__ __align__(16) unsigned tiles[];
    const unsigned DO_ROWS = ROWS, K_ROWS = 2 * ROWS, V_ROWS = 2 * ROWS + 2 * TILE;
    float* delta = (float*)(tiles + (2 * ROWS + 4 * TILE) * PITCH);
    unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32, group = lane / 4, member = lane % 4;
    unsigned head = blockIdx.y, heads = gridDim.y;
    q += head * seq * dim;
    o += head * seq * dim;
    d_o += head * seq * dim;
    dq += head * seq * dim;
    k += head / kv_group * seq * dim;
    v += head / kv_group * seq * dim;
    unsigned block = CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
    unsigned first = block * ROWS;
    unsigned tiles_n = (seq + TILE - 1) / TILE;
    if (CAUSAL) tiles_n = min(tiles_n, (first + ROWS + TILE - 1) / TILE);
    stage<D>(tiles, q, seq, first, 0, dim);
    stage<D>(tiles, d_o, seq, first, DO_ROWS, dim);
    if (!SAVED) stage<D>(tiles, k, seq, 0, K_ROWS, dim);
    asm volatile("cp.async.commit_group;");
    {
        unsigned row = first + tid / 2;
        float sum = 0.f;
        if (row < seq) {
#pragma unroll
            for (unsigned i = 0; i < D / 4; ++i) {
                unsigned c = (tid % 2) * (D / 2) + 2 * i;
                if (dim != D && c >= dim) continue;
                unsigned a = *(const unsigned*)(o + row * dim + c), b = *(const unsigned*)(d_o + row * dim + c);
                sum += low_of(a) * low_of(b) + high_of(a) * high_of(b);
            }
        }
        sum += __shfl_xor_sync(0xffffffff, sum, 1);
        if (tid % 2 == 0) {
            delta[tid / 2] = sum;
            if (row < seq) stats[heads * seq + head * seq + row] = sum;
        }
    }
    unsigned a_row, a_word, k_row, k_word;
    lanes(a_row, a_word, k_row, k_word);
    unsigned fq[MAX_DIM / 16][4], fdo[MAX_DIM / 16][4];
    const float scale = 1.4426950408889634f / sqrtf((float)dim), plain_scale = 1.f / sqrtf((float)dim);
    unsigned my_row0 = first + 16 * warp + group;
    float max[2] = {-INFINITY, -INFINITY}, sum[2] = {0.f, 0.f};
    // SAVED: each row's lse as the forward saved it; no first pass.
    for (unsigned t = 0; !SAVED && t < tiles_n; ++t) {
        unsigned slot = t % 2;
        if (t + 1 < tiles_n) {
            stage<D>(tiles, k, seq, (t + 1) * TILE, K_ROWS + (1 - slot) * TILE, dim);
            asm volatile("cp.async.commit_group;");
            asm volatile("cp.async.wait_group 1;");
        } else {
            asm volatile("cp.async.wait_group 0;");
        }
        __syncthreads();
        if (t == 0) {
#pragma unroll
            for (unsigned kk = 0; kk < D / 16; ++kk) {
                ldmatrix_x4(fq[kk], tiles + (16 * warp + a_row) * PITCH + 8 * kk + a_word, false);
                ldmatrix_x4(fdo[kk], tiles + (DO_ROWS + 16 * warp + a_row) * PITCH + 8 * kk + a_word, false);
            }
        }
        for (unsigned half = 0; half < 2; ++half) {
            unsigned key0 = t * TILE + 32 * half;
            float s[4][4];
            rows_by_rows<D>(tiles, fq, K_ROWS + slot * TILE + 32 * half, *(float(*)[2][4])s);
            rows_by_rows<D>(tiles, fq, K_ROWS + slot * TILE + 32 * half + 16, *(float(*)[2][4])(s + 2));
            float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
            for (unsigned j = 0; j < 4; ++j)
#pragma unroll
                for (unsigned r = 0; r < 4; ++r) {
                    unsigned key = key0 + 8 * j + 2 * member + r % 2;
                    bool masked = key >= seq || (CAUSAL && key > my_row0 + 8 * (r / 2));
                    s[j][r] = masked ? -INFINITY : s[j][r] * scale;
                    tile_max[r / 2] = fmaxf(tile_max[r / 2], s[j][r]);
                }
#pragma unroll
            for (unsigned h = 0; h < 2; ++h) {
                float m = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffff, tile_max[h], 1));
                m = fmaxf(fmaxf(m, __shfl_xor_sync(0xffffffff, m, 2)), max[h]);
                float base = m == -INFINITY ? 0.f : m;
                sum[h] *= exp2_approx(max[h] - base);
                max[h] = m;
#pragma unroll
                for (unsigned j = 0; j < 4; ++j)
                    sum[h] += exp2_approx(s[j][2 * h] - base) + exp2_approx(s[j][2 * h + 1] - base);
            }
        }
        __syncthreads();
    }
    float lse[2];
#pragma unroll
    for (unsigned h = 0; h < 2; ++h) {
        unsigned row = my_row0 + 8 * h;
        if (SAVED) {
            lse[h] = row < seq ? stats[head * seq + row] : 0.f;
            continue;
        }
        float total = sum[h] + __shfl_xor_sync(0xffffffff, sum[h], 1);
        total += __shfl_xor_sync(0xffffffff, total, 2);
        lse[h] = max[h] + log2_approx(total);
        if (member == 0 && row < seq) stats[head * seq + row] = lse[h];
    }
    if (SAVED) {
        // Q's and dO's tiles landed and every row's delta written before either is read.
        asm volatile("cp.async.wait_group 0;");
        __syncthreads();
#pragma unroll
        for (unsigned kk = 0; kk < D / 16; ++kk) {
            ldmatrix_x4(fq[kk], tiles + (16 * warp + a_row) * PITCH + 8 * kk + a_word, false);
            ldmatrix_x4(fdo[kk], tiles + (DO_ROWS + 16 * warp + a_row) * PITCH + 8 * kk + a_word, false);
        }
    }
    float row_delta[2] = {delta[16 * warp + group], delta[16 * warp + group + 8]};
    stage<D>(tiles, k, seq, 0, K_ROWS, dim);
    stage<D>(tiles, v, seq, 0, V_ROWS, dim);
    asm volatile("cp.async.commit_group;");
    float acc[MAX_DIM / 8][4] = {};
    for (unsigned t = 0; t < tiles_n; ++t) {
        unsigned slot = t % 2;
        if (t + 1 < tiles_n) {
            stage<D>(tiles, k, seq, (t + 1) * TILE, K_ROWS + (1 - slot) * TILE, dim);
            stage<D>(tiles, v, seq, (t + 1) * TILE, V_ROWS + (1 - slot) * TILE, dim);
            asm volatile("cp.async.commit_group;");
            asm volatile("cp.async.wait_group 1;");
        } else {
            asm volatile("cp.async.wait_group 0;");
        }
        __syncthreads();
        for (unsigned half = 0; half < 2; ++half) {
            unsigned key0 = t * TILE + 32 * half;
            float s[4][4], dp[4][4];
            rows_by_rows<D>(tiles, fq, K_ROWS + slot * TILE + 32 * half, *(float(*)[2][4])s);
            rows_by_rows<D>(tiles, fq, K_ROWS + slot * TILE + 32 * half + 16, *(float(*)[2][4])(s + 2));
            rows_by_rows<D>(tiles, fdo, V_ROWS + slot * TILE + 32 * half, *(float(*)[2][4])dp);
            rows_by_rows<D>(tiles, fdo, V_ROWS + slot * TILE + 32 * half + 16, *(float(*)[2][4])(dp + 2));
            float ds[2][2][4];
#pragma unroll
            for (unsigned j = 0; j < 4; ++j)
#pragma unroll
                for (unsigned r = 0; r < 4; ++r) {
                    unsigned key = key0 + 8 * j + 2 * member + r % 2, h = r / 2;
                    bool masked = key >= seq || (CAUSAL && key > my_row0 + 8 * h);
                    ds[j / 2][j % 2][r] =
                        masked ? 0.f : exp2_approx(s[j][r] * scale - lse[h]) * (dp[j][r] - row_delta[h]);
                }
#pragma unroll
            for (unsigned kk = 0; kk < 2; ++kk) {
                unsigned f[4];
                fragment(ds[kk], f);
                accumulate<D>(tiles, acc, f, K_ROWS + slot * TILE + 32 * half + 16 * kk);
            }
        }
        __syncthreads();
    }
#pragma unroll
    for (unsigned h = 0; h < 2; ++h) {
        unsigned row = my_row0 + 8 * h;
        if (row < seq) {
#pragma unroll
            for (unsigned j = 0; j < D / 8; ++j)
                if (dim == D || 8 * j < dim)
                    *(unsigned*)(dq + row * dim + 8 * j + 2 * member) =
                        pack_bf16x2(acc[j][2 * h] * plain_scale, acc[j][2 * h + 1] * plain_scale);
        }
    }
}

template <unsigned D, bool CAUSAL>
__device__ __forceinline__ void attention_backward_keys(const bf16* q, const bf16* k, const bf16* v, const bf16* d_o,
                                                        bf16* dk, bf16* dv, const float* stats, unsigned kv_group,
                                                        unsigned seq, unsigned dim = D) {
    extern __shared__ __align__(16) unsigned tiles[];
    const unsigned V_ROWS = ROWS, Q_ROWS = 2 * ROWS, DO_ROWS = 2 * ROWS + 2 * TILE;
    float* staged_stats = (float*)(tiles + (2 * ROWS + 4 * TILE) * PITCH);  // [4][TILE]
    unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32, group = lane / 4, member = lane % 4;
    unsigned kv_head = blockIdx.y, heads = gridDim.y * kv_group;
    k += kv_head * seq * dim;
    v += kv_head * seq * dim;
    dk += kv_head * seq * dim;
    dv += kv_head * seq * dim;
    unsigned key0 = blockIdx.x * ROWS;
    unsigned start = CAUSAL ? key0 / TILE : 0;
    unsigned per_head = (seq + TILE - 1) / TILE - start, tiles_n = kv_group * per_head;
    auto stage_queries = [&](unsigned t, unsigned slot) {
        unsigned head = kv_head * kv_group + t / per_head, first = (start + t % per_head) * TILE;
        stage<D>(tiles, q + head * seq * dim, seq, first, Q_ROWS + slot * TILE, dim);
        stage<D>(tiles, d_o + head * seq * dim, seq, first, DO_ROWS + slot * TILE, dim);
        unsigned which = tid / TILE, i = tid % TILE;
        bool inside = first + i < seq;
        const float* src = stats + which * heads * seq + head * seq + (inside ? first + i : 0);
        unsigned address = (unsigned)__cvta_generic_to_shared(staged_stats + (2 * which + slot) * TILE + i);
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(address), "l"(src), "r"(inside ? 4 : 0));
    };
    stage<D>(tiles, k, seq, key0, 0, dim);
    stage<D>(tiles, v, seq, key0, V_ROWS, dim);
    stage_queries(0, 0);
    asm volatile("cp.async.commit_group;");
    const float scale = 1.4426950408889634f / sqrtf((float)dim), plain_scale = 1.f / sqrtf((float)dim);
    unsigned my_key0 = key0 + 16 * warp + group;
    float dk_acc[MAX_DIM / 8][4] = {}, dv_acc[MAX_DIM / 8][4] = {};
    for (unsigned t = 0; t < tiles_n; ++t) {
        unsigned slot = t % 2;
        if (t + 1 < tiles_n) {
            stage_queries(t + 1, 1 - slot);
            asm volatile("cp.async.commit_group;");
            asm volatile("cp.async.wait_group 1;");
        } else {
            asm volatile("cp.async.wait_group 0;");
        }
        __syncthreads();
        unsigned first = (start + t % per_head) * TILE;
#pragma unroll 1
        for (unsigned qs = 0; qs < TILE / 16; ++qs) {
            unsigned q_at = Q_ROWS + slot * TILE + 16 * qs, do_at = DO_ROWS + slot * TILE + 16 * qs;
            float scores[2][4], p[2][4];
            staged_by_rows<D>(tiles, 16 * warp, q_at, scores);
#pragma unroll
            for (unsigned j = 0; j < 2; ++j)
#pragma unroll
                for (unsigned r = 0; r < 4; ++r) {
                    unsigned c = 16 * qs + 8 * j + 2 * member + r % 2;
                    unsigned query = first + c, key = my_key0 + 8 * (r / 2);
                    bool masked = query >= seq || key >= seq || (CAUSAL && key > query);
                    p[j][r] = masked ? 0.f : exp2_approx(scores[j][r] * scale - staged_stats[slot * TILE + c]);
                }
            unsigned fp[4];
            fragment(p, fp);
            accumulate<D>(tiles, dv_acc, fp, do_at);
            float ds[2][4];
            staged_by_rows<D>(tiles, V_ROWS + 16 * warp, do_at, ds);
#pragma unroll
            for (unsigned j = 0; j < 2; ++j)
#pragma unroll
                for (unsigned r = 0; r < 4; ++r) {
                    float delta = staged_stats[(2 + slot) * TILE + 16 * qs + 8 * j + 2 * member + r % 2];
                    unsigned pair = fp[2 * j + r / 2];
                    float weight = r % 2 == 0 ? low_of(pair) : high_of(pair);
                    ds[j][r] = weight == 0.f ? 0.f : weight * (ds[j][r] - delta);
                }
            unsigned fds[4];
            fragment(ds, fds);
            accumulate<D>(tiles, dk_acc, fds, q_at);
        }
        __syncthreads();
    }
#pragma unroll
    for (unsigned h = 0; h < 2; ++h) {
        unsigned key = my_key0 + 8 * h;
        if (key < seq) {
#pragma unroll
            for (unsigned j = 0; j < D / 8; ++j) {
                if (dim != D && 8 * j >= dim) continue;
                unsigned at = key * dim + 8 * j + 2 * member;
                *(unsigned*)(dk + at) = pack_bf16x2(dk_acc[j][2 * h] * plain_scale, dk_acc[j][2 * h + 1] * plain_scale);
                *(unsigned*)(dv + at) = pack_bf16x2(dv_acc[j][2 * h], dv_acc[j][2 * h + 1]);
            }
        }
    }
}
