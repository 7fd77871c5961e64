// C = A·B with 2D register blocking (kernels::matmul::register_2d): a 128×128 tile per block of 256
// threads, an 8×8 block of outputs per thread; A's 128×8 slice stored transposed, rows padded by 4.
#define BM 128u
#define BN 128u
#define BK 8u
#define TM 8u
#define TN 8u
#define THREADS ((BM / TM) * (BN / TN))
#define A_PITCH (BM + 4u)

extern "C" __global__ void matmul_register_2d_cuda(const float* a, const float* b, float* c, unsigned m, unsigned n,
                                                   unsigned k) {
    extern __shared__ float shared[];
    float* a_slice = shared;               // BK rows of A_PITCH
    float* b_slice = shared + BK * A_PITCH; // BK rows of BN
    unsigned t = threadIdx.x;
    unsigned tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
    unsigned row0 = t / (BN / TN) * TM, col0 = t % (BN / TN) * TN;
    float acc[TM][TN] = {};
    for (unsigned step = 0; step < (k + BK - 1) / BK; ++step) {
        unsigned k0 = step * BK;
#pragma unroll
        for (unsigned r = 0; r < BM * BK / THREADS; ++r) {
            unsigned i = t + THREADS * r, row = i / BK, kk = i % BK;
            unsigned global_row = tile_row + row, global_k = k0 + kk;
            a_slice[kk * A_PITCH + row] = (global_row < m && global_k < k) ? a[global_row * k + global_k] : 0.0f;
        }
#pragma unroll
        for (unsigned r = 0; r < BK * BN / THREADS; ++r) {
            unsigned i = t + THREADS * r, kk = i / BN, col = i % BN;
            unsigned global_k = k0 + kk, global_col = tile_col + col;
            b_slice[kk * BN + col] = (global_k < k && global_col < n) ? b[global_k * n + global_col] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (unsigned kk = 0; kk < BK; ++kk) {
            float column[TM], row[TN];
#pragma unroll
            for (unsigned i = 0; i < TM; ++i) column[i] = a_slice[kk * A_PITCH + row0 + i];
#pragma unroll
            for (unsigned j = 0; j < TN; ++j) row[j] = b_slice[kk * BN + col0 + j];
#pragma unroll
            for (unsigned i = 0; i < TM; ++i)
#pragma unroll
                for (unsigned j = 0; j < TN; ++j) acc[i][j] = fmaf(column[i], row[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (unsigned i = 0; i < TM; ++i) {
        unsigned global_row = tile_row + row0 + i;
#pragma unroll
        for (unsigned j = 0; j < TN; ++j) {
            unsigned global_col = tile_col + col0 + j;
            if (global_row < m && global_col < n) c[global_row * n + global_col] = acc[i][j];
        }
    }
}
