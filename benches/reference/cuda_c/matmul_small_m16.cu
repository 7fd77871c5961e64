// kernels::matmul::small_m16: C = A·B for A of 9–16 rows, f32 on the CUDA cores. As small_m
// (matmul_small_m.cuh), except that the block stages its sixteen rows of A in shared memory, 512 k
// at a time (rows padded by four floats), and each lane reads a row's four values of a step in one
// broadcast 16-byte load; B's rows are loaded two steps ahead of the one multiplied (one block
// resides per SM). A's chunk and the warps' meeting use the same bytes, one after the other.
#include "matmul_small_m.cuh"

#define SMALL_M16_ROWS 16
#define SMALL_M16_W 4
#define SMALL_M16_CHUNK (16 * SMALL_M_BLOCK_STEP)
#define SMALL_M16_PITCH (SMALL_M16_CHUNK + 4)

template <bool VECTOR>
__device__ __forceinline__ void small_m16_stage_a(const float* a, float* staged, unsigned m, unsigned k, unsigned row0,
                                                  unsigned from, unsigned end) {
    unsigned t = threadIdx.x;
    if (VECTOR) {
#pragma unroll
        for (unsigned j = 0; j < SMALL_M16_ROWS * SMALL_M16_CHUNK / 4 / SMALL_M_THREADS; ++j) {
            unsigned i = t + j * SMALL_M_THREADS;
            unsigned r = i / (SMALL_M16_CHUNK / 4), col = 4 * (i % (SMALL_M16_CHUNK / 4));
            float4 four = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (row0 + r < m && from + col < end) four = *(const float4*)(a + (row0 + r) * k + from + col);
            *(float4*)(staged + r * SMALL_M16_PITCH + col) = four;
        }
    } else {
#pragma unroll
        for (unsigned j = 0; j < SMALL_M16_ROWS * SMALL_M16_CHUNK / SMALL_M_THREADS; ++j) {
            unsigned i = t + j * SMALL_M_THREADS;
            unsigned r = i / SMALL_M16_CHUNK, col = i % SMALL_M16_CHUNK;
            staged[r * SMALL_M16_PITCH + col] = row0 + r < m && from + col < end ? a[(row0 + r) * k + from + col] : 0.0f;
        }
    }
}

template <bool VECTOR>
__device__ __forceinline__ void small_m16_stream(const float* a, const float* b, unsigned m, unsigned n, unsigned k,
                                                 unsigned begin, unsigned end, unsigned row0, unsigned col,
                                                 unsigned warp, float (&acc)[SMALL_M16_ROWS][SMALL_M16_W]) {
    extern __shared__ __align__(16) float staged[];
    unsigned next[SMALL_M_STEP][4] = {}, after_next[SMALL_M_STEP][4] = {};
    auto rows_at = [&](unsigned kk, unsigned (&rows)[SMALL_M_STEP][4]) {
#pragma unroll
        for (unsigned u = 0; u < SMALL_M_STEP; ++u) {
            if (VECTOR || kk + u < end) {
                small_m_row_of_b<F32Operands, SMALL_M16_W>(b, n, kk + u, col, VECTOR, rows[u]);
            } else {
#pragma unroll
                for (unsigned i = 0; i < 4; ++i) rows[u][i] = 0;
            }
        }
    };
    unsigned kk = begin + warp * SMALL_M_STEP;
    if (kk < end) rows_at(kk, next);
    if (kk + SMALL_M_BLOCK_STEP < end) rows_at(kk + SMALL_M_BLOCK_STEP, after_next);
    for (unsigned from = begin; from < end; from += SMALL_M16_CHUNK) {
        unsigned chunk_end = end - from < SMALL_M16_CHUNK ? end : from + SMALL_M16_CHUNK;
        __syncthreads();
        small_m16_stage_a<VECTOR>(a, staged, m, k, row0, from, end);
        __syncthreads();
        for (; kk < chunk_end; kk += SMALL_M_BLOCK_STEP) {
            unsigned current[SMALL_M_STEP][4];
#pragma unroll
            for (unsigned u = 0; u < SMALL_M_STEP; ++u)
#pragma unroll
                for (unsigned i = 0; i < 4; ++i) current[u][i] = next[u][i], next[u][i] = after_next[u][i];
            if (kk + 2 * SMALL_M_BLOCK_STEP < end) rows_at(kk + 2 * SMALL_M_BLOCK_STEP, after_next);
#pragma unroll
            for (unsigned r = 0; r < SMALL_M16_ROWS; ++r) {
                float4 four = *(const float4*)(staged + r * SMALL_M16_PITCH + (kk - from));
                float f[4] = {four.x, four.y, four.z, four.w};
#pragma unroll
                for (unsigned u = 0; u < SMALL_M_STEP; ++u)
#pragma unroll
                    for (unsigned q = 0; q < SMALL_M16_W; ++q)
                        acc[r][q] = fmaf(f[u], F32Operands::widen(current[u], q), acc[r][q]);
            }
        }
    }
    // The meeting reuses A's bytes.
    __syncthreads();
}

extern "C" __global__ void __launch_bounds__(SMALL_M_THREADS, 1)
    matmul_small_m16_cuda(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k,
                          unsigned* arrivals) {
    KRun run = run_of_k<SMALL_M_BLOCK_STEP>(k);
    if (run.begin == run.end) return;
    bool vector = k % 4 == 0 && n % SMALL_M16_W == 0 && ((unsigned long long)a & 15) == 0 &&
                  ((unsigned long long)b & 15) == 0;
    unsigned groups = (m + SMALL_M16_ROWS - 1) / SMALL_M16_ROWS;
    unsigned row0 = (blockIdx.x % groups) * SMALL_M16_ROWS;
    unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    unsigned col = (blockIdx.x / groups) * 32 * SMALL_M16_W + lane * SMALL_M16_W;
    float acc[SMALL_M16_ROWS][SMALL_M16_W] = {};
    if (vector)
        small_m16_stream<true>(a, b, m, n, k, run.begin, run.end, row0, col, warp, acc);
    else
        small_m16_stream<false>(a, b, m, n, k, run.begin, run.end, row0, col, warp, acc);
    small_m_finish<SMALL_M16_ROWS, SMALL_M16_W>(acc, c, m, n, row0, col, warp, run.runs, arrivals);
}
