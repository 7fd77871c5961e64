// The skewed transpose (kernels::transpose::skewed): the peeled tile, with each block's part of an
// output row starting at the 16-byte boundary at or below its first element, so that every block
// writes whole aligned float4 chunks; 67 input rows (its 64 and the 3 before) staged as the 17
// aligned chunks that cover each. Interior blocks run without tests; edge blocks test each element.
#define SKEW_THREADS 256u
#define SKEW_T 64u
#define SKEW_BEFORE 3u
#define SKEW_ROWS_IN (SKEW_T + SKEW_BEFORE)
#define SKEW_CHUNKS_IN (SKEW_T / 4 + 1)
#define SKEW_PASSES_IN ((SKEW_ROWS_IN * SKEW_CHUNKS_IN + SKEW_THREADS - 1) / SKEW_THREADS)
#define SKEW_CHUNKS_OUT (SKEW_T / 4)
#define SKEW_PASSES_OUT (SKEW_T * SKEW_CHUNKS_OUT / SKEW_THREADS)
#define SKEW_SLACK 4u
#define SKEW_PITCH (SKEW_T + 2 * SKEW_SLACK + 1)

__device__ __forceinline__ unsigned skew_misalignment(const float* p, unsigned offset) {
    return ((unsigned)((unsigned long long)p >> 2) + offset) & 3;
}

__device__ __forceinline__ void skew_stage(float* tile, unsigned s, unsigned k, unsigned delta, float4 v) {
    float* at = tile + s * SKEW_PITCH + 4 * k + SKEW_SLACK - delta;
    at[0] = v.x;
    at[1] = v.y;
    at[2] = v.z;
    at[3] = v.w;
}

__device__ __forceinline__ float4 skew_column_chunk(const float* tile, unsigned s, unsigned c) {
    const float* at = tile + s * SKEW_PITCH + c + SKEW_SLACK;
    return make_float4(at[0], at[SKEW_PITCH], at[2 * SKEW_PITCH], at[3 * SKEW_PITCH]);
}

__device__ __forceinline__ void skew_interior(float* tile, const float* input, float* output, unsigned rows, unsigned cols) {
    unsigned t = threadIdx.x;
    unsigned band = blockIdx.y * SKEW_T, tile_col = blockIdx.x * SKEW_T;
    float4 chunks[SKEW_PASSES_IN];
#pragma unroll
    for (unsigned pass = 0; pass < SKEW_PASSES_IN; pass++) {
        unsigned i = t + pass * SKEW_THREADS;
        unsigned s = i / SKEW_CHUNKS_IN, k = i % SKEW_CHUNKS_IN;
        if (s < SKEW_ROWS_IN) {
            unsigned a = (band - SKEW_BEFORE + s) * cols + tile_col;
            chunks[pass] = *reinterpret_cast<const float4*>(input + a - skew_misalignment(input, a) + 4 * k);
        }
    }
#pragma unroll
    for (unsigned pass = 0; pass < SKEW_PASSES_IN; pass++) {
        unsigned i = t + pass * SKEW_THREADS;
        unsigned s = i / SKEW_CHUNKS_IN, k = i % SKEW_CHUNKS_IN;
        if (s < SKEW_ROWS_IN) {
            unsigned a = (band - SKEW_BEFORE + s) * cols + tile_col;
            skew_stage(tile, s, k, skew_misalignment(input, a), chunks[pass]);
        }
    }
    __syncthreads();
#pragma unroll
    for (unsigned pass = 0; pass < SKEW_PASSES_OUT; pass++) {
        unsigned i = t + pass * SKEW_THREADS;
        unsigned c = i / SKEW_CHUNKS_OUT, k = i % SKEW_CHUNKS_OUT;
        unsigned out_row = tile_col + c;
        if (out_row < cols) {
            unsigned b = out_row * rows + band;
            unsigned epsilon = skew_misalignment(output, b);
            *reinterpret_cast<float4*>(output + b - epsilon + 4 * k) = skew_column_chunk(tile, SKEW_BEFORE - epsilon + 4 * k, c);
        }
    }
}

__device__ __forceinline__ void skew_edge(float* tile, const float* input, float* output, unsigned rows, unsigned cols) {
    unsigned t = threadIdx.x;
    long long band = (long long)blockIdx.y * SKEW_T;
    unsigned tile_col = blockIdx.x * SKEW_T;
    long long len = (long long)rows * cols;
#pragma unroll
    for (unsigned pass = 0; pass < SKEW_PASSES_IN; pass++) {
        unsigned i = t + pass * SKEW_THREADS;
        unsigned s = i / SKEW_CHUNKS_IN, k = i % SKEW_CHUNKS_IN;
        long long j = band - SKEW_BEFORE + s;
        if (s >= SKEW_ROWS_IN || j < 0 || j >= rows) continue;
        long long a = j * cols + tile_col;
        unsigned delta = skew_misalignment(input, (unsigned)a);
        long long start = a - delta + 4 * k;
        float4 v;
        if (start >= 0 && start + 4 <= len) {
            v = *reinterpret_cast<const float4*>(input + start);
        } else {
            float e[4];
#pragma unroll
            for (int q = 0; q < 4; q++) e[q] = start + q >= 0 && start + q < len ? input[start + q] : 0.0f;
            v = make_float4(e[0], e[1], e[2], e[3]);
        }
        skew_stage(tile, s, k, delta, v);
    }
    __syncthreads();
#pragma unroll
    for (unsigned pass = 0; pass < SKEW_PASSES_OUT; pass++) {
        unsigned i = t + pass * SKEW_THREADS;
        unsigned c = i / SKEW_CHUNKS_OUT, k = i % SKEW_CHUNKS_OUT;
        unsigned out_row = tile_col + c;
        if (out_row >= cols) continue;
        long long b = (long long)out_row * rows + band;
        unsigned epsilon = skew_misalignment(output, (unsigned)b);
        long long j0 = band - epsilon + 4 * k;
        unsigned s = SKEW_BEFORE - epsilon + 4 * k;
        long long start = b - epsilon + 4 * k;
        if (j0 >= 0 && j0 + 3 < rows) {
            *reinterpret_cast<float4*>(output + start) = skew_column_chunk(tile, s, c);
        } else {
#pragma unroll
            for (unsigned e = 0; e < 4; e++) {
                if (j0 + e >= 0 && j0 + e < rows) output[start + e] = tile[(s + e) * SKEW_PITCH + c + SKEW_SLACK];
            }
        }
    }
}

extern "C" __global__ void transpose_skewed_cuda(const float* input, float* output, unsigned rows, unsigned cols) {
    extern __shared__ float tile[];
    unsigned band = blockIdx.y * SKEW_T, tile_col = blockIdx.x * SKEW_T;
    unsigned long long last_read = ((unsigned long long)band + SKEW_T - 1) * cols + tile_col + 4 * SKEW_CHUNKS_IN;
    bool inner = band >= SKEW_BEFORE && (unsigned long long)band + SKEW_T <= rows && last_read <= (unsigned long long)rows * cols;
    if (inner) {
        skew_interior(tile, input, output, rows, cols);
    } else {
        skew_edge(tile, input, output, rows, cols);
    }
}
