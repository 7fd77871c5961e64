// C = A·B with the slices double-buffered through cp.async (kernels::matmul::double_buffered): a
// 128×128 tile per block of 256 threads, 8×8 outputs per thread (rows 16 apart, 8 consecutive
// columns); A's slice row-major with rows padded to 12 floats, B's dense; the copies where k and n
// are multiples of 4 and the matrices aligned, else plain loads and stores. Two blocks per SM.
#include "matmul_blocking.cuh"
// A's slice here is row-major: rows of BK padded to 12 floats.
#define A_ROW_PITCH (BK + 4u)
#define ROW_STRIDE (BM / TM)
#define A_FLOATS (BM * A_ROW_PITCH)
#define B_FLOATS (BK * BN)

__device__ __forceinline__ void copy16_async(float* dst, const float* src) {
    unsigned shared = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(shared), "l"(src) : "memory");
}

__device__ __forceinline__ void stage(float* a_slice, float* b_slice, const float* a, const float* b, unsigned m,
                                      unsigned n, unsigned k, unsigned k0, bool vector) {
    unsigned t = threadIdx.x, tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
    if (vector) {
        unsigned row = t / (BK / 4), kk = 4 * (t % (BK / 4));
        unsigned global_row = tile_row + row, global_k = k0 + kk;
        if (global_row < m && global_k < k)
            copy16_async(a_slice + row * A_ROW_PITCH + kk, a + global_row * k + global_k);
        else
            *(float4*)(a_slice + row * A_ROW_PITCH + kk) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        unsigned kb = t / (BN / 4), col = 4 * (t % (BN / 4));
        unsigned global_kb = k0 + kb, global_col = tile_col + col;
        if (global_kb < k && global_col < n)
            copy16_async(b_slice + kb * BN + col, b + global_kb * n + global_col);
        else
            *(float4*)(b_slice + kb * BN + col) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    } else {
#pragma unroll
        for (unsigned r = 0; r < BM * BK / THREADS; ++r) {
            unsigned i = t + THREADS * r, row = i / BK, kk = i % BK;
            unsigned global_row = tile_row + row, global_k = k0 + kk;
            a_slice[row * A_ROW_PITCH + kk] = (global_row < m && global_k < k) ? a[global_row * k + global_k] : 0.0f;
        }
#pragma unroll
        for (unsigned r = 0; r < BK * BN / THREADS; ++r) {
            unsigned i = t + THREADS * r, kk = i / BN, col = i % BN;
            unsigned global_k = k0 + kk, global_col = tile_col + col;
            b_slice[kk * BN + col] = (global_k < k && global_col < n) ? b[global_k * n + global_col] : 0.0f;
        }
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
}

extern "C" __global__ void __launch_bounds__(256, 2) matmul_double_buffered_cuda(const float* a, const float* b, float* c,
                                                                                 unsigned m, unsigned n, unsigned k, unsigned* /* arrivals: split-k's */) {
    extern __shared__ __align__(16) float shared[];
    // a0, b0, a1, b1, as kernels::matmul::double_buffered::Buffers carves them.
    float* slices[2][2] = {{shared, shared + A_FLOATS}, {shared + A_FLOATS + B_FLOATS, shared + 2 * A_FLOATS + B_FLOATS}};
    unsigned t = threadIdx.x, row0 = t / (BN / TN), col0 = t % (BN / TN) * TN;
    bool vector = k % 4 == 0 && n % 4 == 0 && ((unsigned long long)a & 15) == 0 && ((unsigned long long)b & 15) == 0 &&
                  ((unsigned long long)c & 15) == 0;
    unsigned steps = (k + BK - 1) / BK;
    float acc[TM][TN] = {};
    stage(slices[0][0], slices[0][1], a, b, m, n, k, 0, vector);
    for (unsigned step = 0; step < steps; ++step) {
        if (step + 1 < steps)
            stage(slices[(step + 1) % 2][0], slices[(step + 1) % 2][1], a, b, m, n, k, (step + 1) * BK, vector);
        else
            asm volatile("cp.async.commit_group;" ::: "memory");
        asm volatile("cp.async.wait_group 1;" ::: "memory");
        __syncthreads();
        const float* a_slice = slices[step % 2][0];
        const float* b_slice = slices[step % 2][1];
#pragma unroll 1
        for (unsigned half = 0; half < 2; ++half) {
            float4 rows[TM];
#pragma unroll
            for (unsigned i = 0; i < TM; ++i) rows[i] = *(const float4*)(a_slice + (row0 + ROW_STRIDE * i) * A_ROW_PITCH + 4 * half);
#pragma unroll
            for (unsigned q = 0; q < 4; ++q) {
                unsigned kk = 4 * half + q;
                float4 low = *(const float4*)(b_slice + kk * BN + col0), high = *(const float4*)(b_slice + kk * BN + col0 + 4);
                float row[TN] = {low.x, low.y, low.z, low.w, high.x, high.y, high.z, high.w};
                float column[TM];
#pragma unroll
                for (unsigned i = 0; i < TM; ++i) column[i] = q == 0 ? rows[i].x : q == 1 ? rows[i].y : q == 2 ? rows[i].z : rows[i].w;
                add_outer_product(acc, column, row);
            }
        }
        __syncthreads();
    }
    unsigned tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
#pragma unroll
    for (unsigned i = 0; i < TM; ++i) {
        unsigned global_row = tile_row + row0 + ROW_STRIDE * i;
        if (vector) {
#pragma unroll
            for (unsigned h = 0; h < TN / 4; ++h) {
                unsigned global_col = tile_col + col0 + 4 * h;
                if (global_row < m && global_col < n)
                    *(float4*)(c + global_row * n + global_col) =
                        make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
            }
        } else {
#pragma unroll
            for (unsigned j = 0; j < TN; ++j) {
                unsigned global_col = tile_col + col0 + j;
                if (global_row < m && global_col < n) c[global_row * n + global_col] = acc[i][j];
            }
        }
    }
}
