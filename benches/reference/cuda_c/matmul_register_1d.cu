// C = A·B with 1D register blocking (kernels::matmul::register_1d): a 64×64 tile per block of 512
// threads, a column of 8 outputs per thread; A's 64×8 slice read as two float4 per row.
#define BM 64u
#define BN 64u
#define BK 8u
#define TM 8u
#define THREADS (BM / TM * BN)

extern "C" __global__ void matmul_register_1d_cuda(const float* a, const float* b, float* c, unsigned m, unsigned n,
                                                   unsigned k, unsigned* /* arrivals: split-k's */) {
    extern __shared__ __align__(16) float shared[];
    float* a_slice = shared;            // BM rows of BK
    float* b_slice = shared + BM * BK;  // BK rows of BN
    unsigned t = threadIdx.x;
    unsigned tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
    unsigned row0 = t / BN * TM, col = t % BN;
    float acc[TM] = {};
    for (unsigned step = 0; step < (k + BK - 1) / BK; ++step) {
        unsigned k0 = step * BK;
        unsigned a_row = t / BK, a_k = t % BK;
        unsigned global_row = tile_row + a_row, global_k = k0 + a_k;
        a_slice[a_row * BK + a_k] = (global_row < m && global_k < k) ? a[global_row * k + global_k] : 0.0f;
        unsigned b_k = t / BN, b_col = t % BN;
        unsigned global_kb = k0 + b_k, global_col = tile_col + b_col;
        b_slice[b_k * BN + b_col] = (global_kb < k && global_col < n) ? b[global_kb * n + global_col] : 0.0f;
        __syncthreads();
        float column[BK];
#pragma unroll
        for (unsigned kk = 0; kk < BK; ++kk) column[kk] = b_slice[kk * BN + col];
#pragma unroll
        for (unsigned i = 0; i < TM; ++i) {
            float4 low = *(const float4*)(a_slice + (row0 + i) * BK), high = *(const float4*)(a_slice + (row0 + i) * BK + 4);
            float row[BK] = {low.x, low.y, low.z, low.w, high.x, high.y, high.z, high.w};
#pragma unroll
            for (unsigned kk = 0; kk < BK; ++kk) acc[i] = fmaf(row[kk], column[kk], acc[i]);
        }
        __syncthreads();
    }
    unsigned global_col = tile_col + col;
#pragma unroll
    for (unsigned i = 0; i < TM; ++i) {
        unsigned global_row = tile_row + row0 + i;
        if (global_row < m && global_col < n) c[global_row * n + global_col] = acc[i];
    }
}
