// The peeled transpose (kernels::transpose::peeled): a 64x64 tile with four columns of slack each
// side, each input row read as the 17 aligned float4 chunks that cover it, each output row written
// as aligned float4 chunks with its two end chunks one float at a time.
#define PEEL_THREADS 256u
#define PEEL_T 64u
#define PEEL_SLACK 4u
#define PEEL_PITCH (PEEL_T + 2 * PEEL_SLACK + 1)
#define PEEL_CHUNKS (PEEL_T / 4 + 1)
#define PEEL_ITEMS (PEEL_T * PEEL_CHUNKS)
#define PEEL_PASSES ((PEEL_ITEMS + PEEL_THREADS - 1) / PEEL_THREADS)

__device__ __forceinline__ unsigned peel_misalignment(const float* p, unsigned offset) {
    return ((unsigned)((unsigned long long)p >> 2) + offset) & 3;
}

extern "C" __global__ void transpose_peeled_cuda(const float* input, size_t input_len, float* output, size_t output_len,
                                                 unsigned rows, unsigned cols) {
    extern __shared__ float tile[];
    unsigned t = threadIdx.x;
    unsigned tile_row = blockIdx.y * PEEL_T, tile_col = blockIdx.x * PEEL_T;
    unsigned long long len = (unsigned long long)rows * cols;
    float4 chunks[PEEL_PASSES];
#pragma unroll
    for (unsigned pass = 0; pass < PEEL_PASSES; pass++) {
        unsigned i = t + pass * PEEL_THREADS;
        unsigned r = i / PEEL_CHUNKS, k = i % PEEL_CHUNKS;
        unsigned row = tile_row + r;
        chunks[pass] = make_float4(0.f, 0.f, 0.f, 0.f);
        if (i >= PEEL_ITEMS || row >= rows) continue;
        unsigned a = row * cols + tile_col;
        unsigned delta = peel_misalignment(input, a);
        int first = (int)(4 * k) - (int)delta;
        bool whole = (unsigned long long)a + 4 * k >= delta && (unsigned long long)a + 4 * k + 4 <= len + delta;
        if (whole) {
            chunks[pass] = *reinterpret_cast<const float4*>(input + a - delta + 4 * k);
        } else {
            float v[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int c = first + e;
                v[e] = c >= 0 && c < (int)PEEL_T && tile_col + c < cols ? input[a + c] : 0.0f;
            }
            chunks[pass] = make_float4(v[0], v[1], v[2], v[3]);
        }
    }
#pragma unroll
    for (unsigned pass = 0; pass < PEEL_PASSES; pass++) {
        unsigned i = t + pass * PEEL_THREADS;
        unsigned r = i / PEEL_CHUNKS, k = i % PEEL_CHUNKS;
        if (i >= PEEL_ITEMS || tile_row + r >= rows) continue;
        int first = (int)(4 * k) - (int)peel_misalignment(input, (tile_row + r) * cols + tile_col);
        float* at = tile + r * PEEL_PITCH + first + PEEL_SLACK;
        at[0] = chunks[pass].x;
        at[1] = chunks[pass].y;
        at[2] = chunks[pass].z;
        at[3] = chunks[pass].w;
    }
    __syncthreads();
#pragma unroll
    for (unsigned pass = 0; pass < PEEL_PASSES; pass++) {
        unsigned i = t + pass * PEEL_THREADS;
        unsigned c = i / PEEL_CHUNKS, k = i % PEEL_CHUNKS;
        unsigned out_row = tile_col + c;
        if (i >= PEEL_ITEMS || out_row >= cols) continue;
        unsigned b = out_row * rows + tile_row;
        int first = (int)(4 * k) - (int)peel_misalignment(output, b);
        bool head = first >= 0 && tile_row + first < rows;
        bool tail = first + 3 < (int)PEEL_T && tile_row + first + 3 < rows;
        if (head && tail) {
            float4 v;
            v.x = tile[(first + 0) * PEEL_PITCH + c + PEEL_SLACK];
            v.y = tile[(first + 1) * PEEL_PITCH + c + PEEL_SLACK];
            v.z = tile[(first + 2) * PEEL_PITCH + c + PEEL_SLACK];
            v.w = tile[(first + 3) * PEEL_PITCH + c + PEEL_SLACK];
            *reinterpret_cast<float4*>(output + b + first) = v;
        } else {
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int r = first + e;
                if (r >= 0 && r < (int)PEEL_T && tile_row + r < rows) output[b + r] = tile[r * PEEL_PITCH + c + PEEL_SLACK];
            }
        }
    }
}
