// Decoding attention, flash-decoding's first pass (kernels::attention::decode): each warp works
// alone on 16 query rows (the rows of the query heads sharing one KV head) over one run of that
// head's keys; its own Q tile and three-slot ring of 32-key K and V tiles, filled by 16-byte
// cp.async two tiles ahead, ordered by __syncwarp (two warps a block, two blocks an SM on Hopper); scores by mma.sync m16n8k16, the online softmax in
// registers, the exponentials rounded to bf16 as the A fragments of P·V. With one run it writes O;
// with several, each row's normalised output over the run and its log-sum-exp (log2 units) into
// `partial`, for attention_decode_combine. Q and O are [kv_heads][rows][D] bf16, K and V
// [kv_heads][keys][dim], 16-byte aligned; dim is a multiple of 8 up to 128, staged D (64 or 128)
// wide with zeros past it; the causal mask is top-left.
#define ROWS 16
#define KEYS 32
#define WARPS 2
#define SLOTS 3
#define THREADS (WARPS * 32)
#define MAX_DIM 128
#define PITCH (MAX_DIM / 2 + 4)  // words: the widest head in bf16 pairs, plus 16 bytes
#define WARP_ROWS (ROWS + 2 * SLOTS * KEYS)
#define K_ROWS ROWS
#define V_ROWS (ROWS + SLOTS * KEYS)

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

struct Decode {
    unsigned kv_heads, rows, queries, keys, dim, chunk, splits;
    __device__ unsigned visible(bool causal) const { return causal && queries < keys ? queries : keys; }
    __device__ unsigned row_tiles() const { return (rows + ROWS - 1) / ROWS; }
    __device__ unsigned lse_at() const { return kv_heads * rows * splits * dim; }
};

// Rows first..first + rows of a [..][dim] matrix into staged rows at.., zeros from row end on and
// past dim: this lane's chunks.
template <unsigned D>
__device__ __forceinline__ void stage_warp(unsigned* tiles, const bf16* matrix, unsigned first, unsigned rows,
                                           unsigned end, unsigned at, unsigned dim) {
    unsigned lane = threadIdx.x % 32;
#pragma unroll
    for (unsigned i = 0; i < rows * D / 8 / 32; ++i) {
        unsigned e = lane + i * 32, r = e / (D / 8), c = e % (D / 8);
        bool inside = first + r < end && (dim == D || c * 8 < dim);
        const bf16* src = inside ? matrix + (first + r) * dim + c * 8 : matrix;
        unsigned address = (unsigned)__cvta_generic_to_shared(tiles + (at + r) * PITCH + 4 * c);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(address), "l"(src), "r"(inside ? 16 : 0));
    }
}

template <unsigned D, bool CAUSAL>
__device__ __forceinline__ void attention_decode_split(const bf16* q, const bf16* k, const bf16* v, bf16* o,
                                                       float* partial, Decode p) {
    extern __shared__ __align__(16) unsigned tiles[];
    unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, group = lane / 4, member = lane % 4;
    unsigned global_warp = blockIdx.x * WARPS + warp;
    unsigned row_tiles = p.row_tiles();
    unsigned tile = global_warp % row_tiles, rest = global_warp / row_tiles;
    unsigned split = rest % p.splits, kv = rest / p.splits;
    if (kv >= p.kv_heads) return;
    unsigned row0 = tile * ROWS, rows_here = min(p.rows - row0, ROWS);
    unsigned first_key = split * p.chunk, end_key = min(first_key + p.chunk, p.visible(CAUSAL));
    unsigned base = warp * WARP_ROWS;
    q += (kv * p.rows + row0) * p.dim;
    k += kv * p.keys * p.dim;
    v += kv * p.keys * p.dim;
    unsigned tiles_n = (end_key - first_key + KEYS - 1) / KEYS;
    stage_warp<D>(tiles, q, 0, ROWS, rows_here, base, p.dim);
    stage_warp<D>(tiles, k, first_key, KEYS, end_key, base + K_ROWS, p.dim);
    stage_warp<D>(tiles, v, first_key, KEYS, end_key, base + V_ROWS, p.dim);
    asm volatile("cp.async.commit_group;");
    // Tile t of the run into its slot, as a group of its own.
    auto stage_tile = [&](unsigned t) {
        unsigned first = first_key + t * KEYS, slot = t % SLOTS;
        stage_warp<D>(tiles, k, first, KEYS, end_key, base + K_ROWS + slot * KEYS, p.dim);
        stage_warp<D>(tiles, v, first, KEYS, end_key, base + V_ROWS + slot * KEYS, p.dim);
        asm volatile("cp.async.commit_group;");
    };
    if (tiles_n > 1) stage_tile(1);
    unsigned a_row = lane % 8 + 8 * ((lane / 8) % 2), a_word = 4 * (lane / 16);
    unsigned k_row = lane % 8 + 8 * (lane / 16), k_word = 4 * ((lane / 8) % 2);
    unsigned fq[MAX_DIM / 16][4];
    float acc[MAX_DIM / 8][4] = {};
    float max[2] = {-INFINITY, -INFINITY}, sum[2] = {0.f, 0.f};
    const float scale = 1.4426950408889634f / sqrtf((float)p.dim);
    unsigned position[2] = {(row0 + group) % p.queries, (row0 + group + 8) % p.queries};
    for (unsigned t = 0; t < tiles_n; ++t) {
        unsigned slot = t % SLOTS;
        if (t + 2 < tiles_n) {
            stage_tile(t + 2);
            asm volatile("cp.async.wait_group 2;");
        } else if (t + 1 < tiles_n) {
            asm volatile("cp.async.wait_group 1;");
        } else {
            asm volatile("cp.async.wait_group 0;");
        }
        __syncwarp();
        if (t == 0) {
#pragma unroll
            for (unsigned kk = 0; kk < D / 16; ++kk)
                ldmatrix_x4(fq[kk], tiles + (base + a_row) * PITCH + 8 * kk + a_word, false);
        }
        float s[KEYS / 8][4] = {};
#pragma unroll
        for (unsigned kk = 0; kk < D / 16; ++kk)
#pragma unroll
            for (unsigned pi = 0; pi < KEYS / 16; ++pi) {
                unsigned pair[4];
                ldmatrix_x4(pair, tiles + (base + K_ROWS + slot * KEYS + 16 * pi + k_row) * PITCH + 8 * kk + k_word,
                            false);
                mma_bf16(s[2 * pi], fq[kk], pair[0], pair[1]);
                mma_bf16(s[2 * pi + 1], fq[kk], pair[2], pair[3]);
            }
        unsigned key0 = first_key + t * KEYS;
        float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (unsigned j = 0; j < KEYS / 8; ++j)
#pragma unroll
            for (unsigned r = 0; r < 4; ++r) {
                unsigned key = key0 + 8 * j + 2 * member + r % 2;
                bool masked = key >= end_key || (CAUSAL && key > position[r / 2]);
                s[j][r] = masked ? -INFINITY : s[j][r] * scale;
                tile_max[r / 2] = fmaxf(tile_max[r / 2], s[j][r]);
            }
        float base_max[2], alpha[2];
#pragma unroll
        for (unsigned h = 0; h < 2; ++h) {
            float m = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffff, tile_max[h], 1));
            m = fmaxf(fmaxf(m, __shfl_xor_sync(0xffffffff, m, 2)), max[h]);
            base_max[h] = m == -INFINITY ? 0.f : m;
            alpha[h] = exp2_approx(max[h] - base_max[h]);
            max[h] = m;
            sum[h] *= alpha[h];
        }
#pragma unroll
        for (unsigned j = 0; j < D / 8; ++j)
#pragma unroll
            for (unsigned r = 0; r < 4; ++r) acc[j][r] *= alpha[r / 2];
        unsigned fp[KEYS / 16][4];
#pragma unroll
        for (unsigned j = 0; j < KEYS / 8; ++j) {
            float e[4];
#pragma unroll
            for (unsigned r = 0; r < 4; ++r) e[r] = exp2_approx(s[j][r] - base_max[r / 2]);
            sum[0] += e[0] + e[1];
            sum[1] += e[2] + e[3];
            fp[j / 2][2 * (j % 2)] = pack_bf16x2(e[0], e[1]);
            fp[j / 2][2 * (j % 2) + 1] = pack_bf16x2(e[2], e[3]);
        }
#pragma unroll
        for (unsigned kk = 0; kk < KEYS / 16; ++kk)
#pragma unroll
            for (unsigned pi = 0; pi < D / 16; ++pi) {
                unsigned pair[4];
                ldmatrix_x4(pair, tiles + (base + V_ROWS + slot * KEYS + 16 * kk + a_row) * PITCH + 8 * pi + a_word,
                            true);
                mma_bf16(acc[2 * pi], fp[kk], pair[0], pair[1]);
                mma_bf16(acc[2 * pi + 1], fp[kk], pair[2], pair[3]);
            }
        __syncwarp();
    }
#pragma unroll
    for (unsigned h = 0; h < 2; ++h) {
        float total = sum[h] + __shfl_xor_sync(0xffffffff, sum[h], 1);
        total += __shfl_xor_sync(0xffffffff, total, 2);
        unsigned local = group + 8 * h;
        if (local >= rows_here) continue;
        unsigned row = kv * p.rows + row0 + local;
        if (p.splits == 1) {
#pragma unroll
            for (unsigned j = 0; j < D / 8; ++j)
                if (p.dim == D || 8 * j < p.dim)
                    *(unsigned*)(o + row * p.dim + 8 * j + 2 * member) =
                        pack_bf16x2(acc[j][2 * h] / total, acc[j][2 * h + 1] / total);
        } else {
            float inverse = total == 0.f ? 0.f : 1.f / total;
            unsigned at = row * p.splits + split;
#pragma unroll
            for (unsigned j = 0; j < D / 8; ++j)
                if (p.dim == D || 8 * j < p.dim)
                    *(float2*)(partial + at * p.dim + 8 * j + 2 * member) =
                        make_float2(acc[j][2 * h] * inverse, acc[j][2 * h + 1] * inverse);
            if (member == 0) partial[p.lse_at() + at] = max[h] + log2_approx(total);
        }
    }
}

// Flash-decoding's second pass (kernels::attention::combine): a block of 8 warps per query row;
// every warp finds m over the runs, warp w sums runs w, w + 8, … for its lanes' columns, 4 runs'
// loads issued before any is used, and the warps' sums meet in shared memory;
// O = Σ 2^(l_s − m)·o_s / Σ 2^(l_s − m).
#define COMBINE_WARPS 8u
#define COMBINE_BATCH 4u
template <unsigned D>
__device__ __forceinline__ void attention_decode_combine(const float* partial, bf16* o, Decode p) {
    __shared__ float columns[COMBINE_WARPS][MAX_DIM];
    __shared__ float weights[COMBINE_WARPS];
    unsigned row = blockIdx.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    unsigned at = row * p.splits;
    const float* lse = partial + p.lse_at() + at;
    auto inside = [&](unsigned i) { return p.dim == D || 2 * lane + 64 * i < p.dim; };
    float max = -INFINITY;
    for (unsigned s = lane; s < p.splits; s += 32) max = fmaxf(max, lse[s]);
#pragma unroll
    for (unsigned mask = 16; mask > 0; mask /= 2) max = fmaxf(max, __shfl_xor_sync(0xffffffffu, max, mask));
    float total = 0.f;
    float acc[MAX_DIM / 64][2] = {};
    for (unsigned first = warp; first < p.splits; first += COMBINE_BATCH * COMBINE_WARPS) {
        float weight[COMBINE_BATCH] = {};
        float2 pairs[COMBINE_BATCH][MAX_DIM / 64] = {};
#pragma unroll
        for (unsigned b = 0; b < COMBINE_BATCH; ++b) {
            unsigned s = first + b * COMBINE_WARPS;
            if (s >= p.splits) continue;
            weight[b] = lse[s];
#pragma unroll
            for (unsigned i = 0; i < D / 64; ++i)
                if (inside(i)) pairs[b][i] = *(const float2*)(partial + (at + s) * p.dim + 2 * lane + 64 * i);
        }
#pragma unroll
        for (unsigned b = 0; b < COMBINE_BATCH; ++b) {
            if (first + b * COMBINE_WARPS >= p.splits) continue;
            float w = exp2_approx(weight[b] - max);
            total += w;
#pragma unroll
            for (unsigned i = 0; i < D / 64; ++i) {
                acc[i][0] += w * pairs[b][i].x;
                acc[i][1] += w * pairs[b][i].y;
            }
        }
    }
#pragma unroll
    for (unsigned i = 0; i < D / 64; ++i)
        if (inside(i)) {
            columns[warp][2 * lane + 64 * i] = acc[i][0];
            columns[warp][2 * lane + 64 * i + 1] = acc[i][1];
        }
    if (lane == 0) weights[warp] = total;
    __syncthreads();
    unsigned column = threadIdx.x;
    if (32 * warp < p.dim) {
        float sum = 0.f, weight = 0.f;
        if (column < p.dim)
#pragma unroll
            for (unsigned w = 0; w < COMBINE_WARPS; ++w) {
                sum += columns[w][column];
                weight += weights[w];
            }
        float value = sum / weight, next = __shfl_xor_sync(0xffffffffu, value, 1);
        if (column < p.dim && column % 2 == 0) *(unsigned*)(o + row * p.dim + column) = pack_bf16x2(value, next);
    }
}
