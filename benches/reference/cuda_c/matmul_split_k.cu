// kernels::matmul::split_k: the 64×64 warp-tiled product (128 threads, 32×32 per warp, each lane
// 1×2 blocks of 4×4) over block z's run of k, its products added into C with atomicAdd (C zeroed
// before by the same kernel with k = 0). The staging and the loop as in matmul_warp_tiled.cu with
// the run's end in place of k.
#define SK_TILE 64u
#define SK_BK 8u
#define SK_THREADS 128u
#define SK_A_PITCH (SK_TILE + 4u)
#define SK_SLICE_FLOATS (SK_BK * SK_A_PITCH + SK_BK * SK_TILE)

__device__ __forceinline__ void sk_prefetch(const float* a, const float* b, unsigned m, unsigned n, unsigned k,
                                            unsigned end, unsigned k0, float4* a_four, float4* b_four) {
    unsigned tile_row = blockIdx.y * SK_TILE, tile_col = blockIdx.x * SK_TILE, t = threadIdx.x;
    unsigned row = t / (SK_BK / 4), kk = 4 * (t % (SK_BK / 4));
    *a_four = (tile_row + row < m && k0 + kk < end) ? *(const float4*)(a + (tile_row + row) * k + k0 + kk)
                                                    : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    unsigned kb = t / (SK_TILE / 4), col = 4 * (t % (SK_TILE / 4));
    *b_four = (k0 + kb < end && tile_col + col < n) ? *(const float4*)(b + (k0 + kb) * n + tile_col + col)
                                                    : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

__device__ __forceinline__ void sk_store_prefetched(float* slices, float4 a_four, float4 b_four) {
    unsigned t = threadIdx.x, row = t / (SK_BK / 4), kk = 4 * (t % (SK_BK / 4));
    slices[(kk + 0) * SK_A_PITCH + row] = a_four.x;
    slices[(kk + 1) * SK_A_PITCH + row] = a_four.y;
    slices[(kk + 2) * SK_A_PITCH + row] = a_four.z;
    slices[(kk + 3) * SK_A_PITCH + row] = a_four.w;
    *(float4*)(slices + SK_BK * SK_A_PITCH + (t / (SK_TILE / 4)) * SK_TILE + 4 * (t % (SK_TILE / 4))) = b_four;
}

__device__ __forceinline__ void sk_stage_scalar(float* slices, const float* a, const float* b, unsigned m, unsigned n,
                                                unsigned k, unsigned end, unsigned k0) {
    unsigned tile_row = blockIdx.y * SK_TILE, tile_col = blockIdx.x * SK_TILE;
#pragma unroll
    for (unsigned r = 0; r < SK_TILE * SK_BK / SK_THREADS; ++r) {
        unsigned i = threadIdx.x + SK_THREADS * r, row = i / SK_BK, kk = i % SK_BK;
        slices[kk * SK_A_PITCH + row] = (tile_row + row < m && k0 + kk < end) ? a[(tile_row + row) * k + k0 + kk] : 0.0f;
    }
#pragma unroll
    for (unsigned r = 0; r < SK_BK * SK_TILE / SK_THREADS; ++r) {
        unsigned i = threadIdx.x + SK_THREADS * r, kk = i / SK_TILE, col = i % SK_TILE;
        slices[SK_BK * SK_A_PITCH + kk * SK_TILE + col] =
            (k0 + kk < end && tile_col + col < n) ? b[(k0 + kk) * n + tile_col + col] : 0.0f;
    }
}

extern "C" __global__ void __launch_bounds__(128, 4) matmul_split_k_cuda(const float* a, const float* b, float* c,
                                                                         unsigned m, unsigned n, unsigned k) {
    extern __shared__ __align__(16) float shared[];
    unsigned chunk = ((k + gridDim.z - 1) / gridDim.z + SK_BK - 1) / SK_BK * SK_BK;
    unsigned long long begin_wide = (unsigned long long)blockIdx.z * chunk;
    unsigned begin = begin_wide < k ? (unsigned)begin_wide : k;
    unsigned end = begin + chunk < begin || begin + chunk > k ? k : begin + chunk;
    if (k != 0 && begin == end) return;
    unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    unsigned row0 = warp / 2 * 32 + lane / 4 * 4, col0 = warp % 2 * 32 + lane % 4 * 4;
    bool vector = k % 4 == 0 && n % 4 == 0 && ((unsigned long long)a & 15) == 0 && ((unsigned long long)b & 15) == 0;
    unsigned steps = (end - begin + SK_BK - 1) / SK_BK;
    float acc[2][4][4] = {};
    if (vector) {
        float4 a_four, b_four;
        sk_prefetch(a, b, m, n, k, end, begin, &a_four, &b_four);
        sk_store_prefetched(shared, a_four, b_four);
    } else {
        sk_stage_scalar(shared, a, b, m, n, k, end, begin);
    }
    __syncthreads();
    for (unsigned step = 0; step < steps; ++step) {
        bool next = step + 1 < steps;
        unsigned k0 = begin + (step + 1) * SK_BK;
        float4 a_four, b_four;
        if (vector && next) sk_prefetch(a, b, m, n, k, end, k0, &a_four, &b_four);
        const float* a_slice = shared + (step % 2) * SK_SLICE_FLOATS;
        const float* b_slice = a_slice + SK_BK * SK_A_PITCH;
#pragma unroll 1
        for (unsigned kk = 0; kk < SK_BK; ++kk) {
            float4 column = *(const float4*)(a_slice + kk * SK_A_PITCH + row0);
            float4 row[2] = {*(const float4*)(b_slice + kk * SK_TILE + col0),
                             *(const float4*)(b_slice + kk * SK_TILE + col0 + 16)};
            const float cv[4] = {column.x, column.y, column.z, column.w};
#pragma unroll
            for (unsigned r = 0; r < 4; ++r)
#pragma unroll
                for (unsigned j = 0; j < 2; ++j) {
                    const float rv[4] = {row[j].x, row[j].y, row[j].z, row[j].w};
#pragma unroll
                    for (unsigned q = 0; q < 4; ++q) acc[j][r][q] = fmaf(cv[r], rv[q], acc[j][r][q]);
                }
        }
        float* next_slices = shared + ((step + 1) % 2) * SK_SLICE_FLOATS;
        if (vector && next)
            sk_store_prefetched(next_slices, a_four, b_four);
        else if (next)
            sk_stage_scalar(next_slices, a, b, m, n, k, end, k0);
        __syncthreads();
    }
    unsigned tile_row = blockIdx.y * SK_TILE, tile_col = blockIdx.x * SK_TILE;
#pragma unroll
    for (unsigned r = 0; r < 4; ++r) {
        unsigned global_row = tile_row + row0 + r;
#pragma unroll
        for (unsigned j = 0; j < 2; ++j)
#pragma unroll
            for (unsigned q = 0; q < 4; ++q) {
                unsigned global_col = tile_col + col0 + 16 * j + q;
                if (global_row < m && global_col < n) {
                    if (k == 0)
                        c[global_row * n + global_col] = acc[j][r][q];
                    else
                        atomicAdd(c + global_row * n + global_col, acc[j][r][q]);
                }
            }
    }
}
