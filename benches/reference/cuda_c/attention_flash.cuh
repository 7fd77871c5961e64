// Attention forward on mma.sync (kernels::attention::flash): four warps of 16 query rows per block
// of 64; Q's tile staged once and held as A fragments; 64-key tiles of K (ldmatrix) and V
// (ldmatrix.trans) double-buffered by 16-byte cp.async into rows padded by 16 bytes; the online
// softmax in registers (maximum shared by a row's four lanes, the sum a per-lane partial until the
// end); the exponentials, rounded to bf16, reused as the A fragments of P·V. Q, K, V and O are
// [heads][seq][D] bf16 (K and V [heads / kv_group][seq][D]: kv_group query heads share one), 16-byte
// aligned; dim is 64 or 128, or (the any-dimension kernels) a multiple of 8 below D, staged D wide
// with zeros past dim.
#define ROWS 64
#define KEYS 64
#define THREADS 128
#define MAX_DIM 128
#define PITCH (MAX_DIM / 2 + 4)  // words: the widest head in bf16 pairs, plus 16 bytes
#define K_ROWS ROWS
#define V_ROWS (ROWS + 2 * KEYS)

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

// Rows first..first + rows of one head's [seq][dim] matrix into staged rows at.., zeros past seq and
// past dim.
template <unsigned D>
__device__ __forceinline__ void stage(unsigned* tiles, const bf16* matrix, unsigned seq, unsigned first,
                                      unsigned rows, unsigned at, unsigned dim = D) {
    unsigned tid = threadIdx.x;
#pragma unroll
    for (unsigned i = 0; i < rows * D / 8 / THREADS; ++i) {
        unsigned e = tid + i * THREADS, r = e / (D / 8), c = e % (D / 8);
        bool inside = first + r < seq && (dim == D || c * 8 < dim);
        const bf16* src = inside ? matrix + (first + r) * dim + c * 8 : matrix;
        unsigned address = (unsigned)__cvta_generic_to_shared(tiles + (at + r) * PITCH + 4 * c);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(address), "l"(src), "r"(inside ? 16 : 0));
    }
}

template <unsigned D, bool CAUSAL>
__device__ __forceinline__ void attention_flash(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, unsigned seq,
                                                unsigned kv_group, unsigned dim = D) {
    extern __shared__ __align__(16) unsigned tiles[];
    unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, group = lane / 4, member = lane % 4;
    unsigned head = blockIdx.y * seq * dim, kv_head = blockIdx.y / kv_group * seq * dim;
    q += head;
    k += kv_head;
    v += kv_head;
    o += head;
    unsigned block = CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
    unsigned first = block * ROWS;
    unsigned tiles_n = (seq + KEYS - 1) / KEYS;
    if (CAUSAL) tiles_n = min(tiles_n, (first + ROWS + KEYS - 1) / KEYS);
    stage<D>(tiles, q, seq, first, ROWS, 0, dim);
    stage<D>(tiles, k, seq, 0, KEYS, K_ROWS, dim);
    stage<D>(tiles, v, seq, 0, KEYS, V_ROWS, dim);
    asm volatile("cp.async.commit_group;");
    unsigned a_row = lane % 8 + 8 * ((lane / 8) % 2), a_word = 4 * (lane / 16);
    unsigned k_row = lane % 8 + 8 * (lane / 16), k_word = 4 * ((lane / 8) % 2);
    unsigned fq[MAX_DIM / 16][4];
    float acc[MAX_DIM / 8][4] = {};
    float max[2] = {-INFINITY, -INFINITY}, sum[2] = {0.f, 0.f};
    const float scale = 1.4426950408889634f / sqrtf((float)dim);
    unsigned row_of[2] = {first + 16 * warp + group, first + 16 * warp + group + 8};
    for (unsigned t = 0; t < tiles_n; ++t) {
        unsigned slot = t % 2;
        if (t + 1 < tiles_n) {
            stage<D>(tiles, k, seq, (t + 1) * KEYS, KEYS, K_ROWS + (1 - slot) * KEYS, dim);
            stage<D>(tiles, v, seq, (t + 1) * KEYS, KEYS, V_ROWS + (1 - slot) * KEYS, dim);
            asm volatile("cp.async.commit_group;");
            asm volatile("cp.async.wait_group 1;");
        } else {
            asm volatile("cp.async.wait_group 0;");
        }
        __syncthreads();
        if (t == 0) {
#pragma unroll
            for (unsigned kk = 0; kk < D / 16; ++kk)
                ldmatrix_x4(fq[kk], tiles + (16 * warp + a_row) * PITCH + 8 * kk + a_word, false);
        }
        float s[KEYS / 8][4] = {};
#pragma unroll
        for (unsigned kk = 0; kk < D / 16; ++kk)
#pragma unroll
            for (unsigned p = 0; p < KEYS / 16; ++p) {
                unsigned pair[4];
                ldmatrix_x4(pair, tiles + (K_ROWS + slot * KEYS + 16 * p + k_row) * PITCH + 8 * kk + k_word, false);
                mma_bf16(s[2 * p], fq[kk], pair[0], pair[1]);
                mma_bf16(s[2 * p + 1], fq[kk], pair[2], pair[3]);
            }
        unsigned key0 = t * KEYS;
        float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (unsigned j = 0; j < KEYS / 8; ++j)
#pragma unroll
            for (unsigned r = 0; r < 4; ++r) {
                unsigned key = key0 + 8 * j + 2 * member + r % 2;
                bool masked = key >= seq || (CAUSAL && key > row_of[r / 2]);
                s[j][r] = masked ? -INFINITY : s[j][r] * scale;
                tile_max[r / 2] = fmaxf(tile_max[r / 2], s[j][r]);
            }
        float base[2], alpha[2];
#pragma unroll
        for (unsigned h = 0; h < 2; ++h) {
            float m = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffff, tile_max[h], 1));
            m = fmaxf(fmaxf(m, __shfl_xor_sync(0xffffffff, m, 2)), max[h]);
            base[h] = m == -INFINITY ? 0.f : m;
            alpha[h] = exp2_approx(max[h] - base[h]);
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
            for (unsigned r = 0; r < 4; ++r) e[r] = exp2_approx(s[j][r] - base[r / 2]);
            sum[0] += e[0] + e[1];
            sum[1] += e[2] + e[3];
            fp[j / 2][2 * (j % 2)] = pack_bf16x2(e[0], e[1]);
            fp[j / 2][2 * (j % 2) + 1] = pack_bf16x2(e[2], e[3]);
        }
#pragma unroll
        for (unsigned kk = 0; kk < KEYS / 16; ++kk)
#pragma unroll
            for (unsigned p = 0; p < D / 16; ++p) {
                unsigned pair[4];
                ldmatrix_x4(pair, tiles + (V_ROWS + slot * KEYS + 16 * kk + a_row) * PITCH + 8 * p + a_word, true);
                mma_bf16(acc[2 * p], fp[kk], pair[0], pair[1]);
                mma_bf16(acc[2 * p + 1], fp[kk], pair[2], pair[3]);
            }
        __syncthreads();
    }
#pragma unroll
    for (unsigned h = 0; h < 2; ++h) {
        float total = sum[h] + __shfl_xor_sync(0xffffffff, sum[h], 1);
        total += __shfl_xor_sync(0xffffffff, total, 2);
        unsigned row = row_of[h];
        // The row's log-sum-exp in log2 units of the scaled scores, where asked for.
        if (lse && member == 0 && row < seq) lse[blockIdx.y * seq + row] = max[h] + log2_approx(total);
        if (row < seq) {
#pragma unroll
            for (unsigned j = 0; j < D / 8; ++j) {
                if (dim != D && 8 * j >= dim) continue;
                unsigned pair = pack_bf16x2(acc[j][2 * h] / total, acc[j][2 * h + 1] / total);
                *(unsigned*)(o + row * dim + 8 * j + 2 * member) = pair;
            }
        }
    }
}
