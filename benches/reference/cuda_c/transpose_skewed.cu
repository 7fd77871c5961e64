// The skewed transpose (kernels::transpose::skewed): each block's part of an output row starts at
// the 16-byte boundary at or below its first element, so that every block writes whole aligned
// float4 chunks; 67 input rows (its 64 and the 3 before) staged as the 17 aligned chunks that cover
// each, each chunk one 16-byte store where it lay in memory (tile column c of row s at c + delta(s)),
// four rows to a line of 272 floats padded by one chunk. Interior blocks run without tests; edge
// blocks test each element.
#define SKEW_THREADS 256u
#define SKEW_T 64u
#define SKEW_BEFORE 3u
#define SKEW_ROWS_IN (SKEW_T + SKEW_BEFORE)
#define SKEW_CHUNKS_IN (SKEW_T / 4 + 1)
#define SKEW_PASSES_IN ((SKEW_ROWS_IN * SKEW_CHUNKS_IN + SKEW_THREADS - 1) / SKEW_THREADS)
#define SKEW_CHUNKS_OUT (SKEW_T / 4)
#define SKEW_PASSES_OUT (SKEW_T * SKEW_CHUNKS_OUT / SKEW_THREADS)
#define SKEW_ROW (4 * SKEW_CHUNKS_IN)
#define SKEW_LINE (4 * SKEW_ROW + 4)
#define SKEW_LINES ((SKEW_ROWS_IN + 3) / 4)

__device__ __forceinline__ unsigned skew_misalignment(const float* p, unsigned offset) {
    return ((unsigned)((unsigned long long)p >> 2) + offset) & 3;
}

__device__ __forceinline__ void skew_stage(float* tile, unsigned s, unsigned k, float4 v) {
    *reinterpret_cast<float4*>(tile + (s / 4) * SKEW_LINE + (s % 4) * SKEW_ROW + 4 * k) = v;
}

__device__ __forceinline__ float skew_element(const float* tile, unsigned s, unsigned c, unsigned delta) {
    return tile[(s / 4) * SKEW_LINE + (s % 4) * SKEW_ROW + c + delta];
}

__device__ __forceinline__ void skew_interior(float* tile, const float* input, float* output, unsigned rows, unsigned cols) {
    unsigned t = threadIdx.x;
    unsigned band = blockIdx.y * SKEW_T, tile_col = blockIdx.x * SKEW_T;
    float4 chunks[SKEW_PASSES_IN];
    // Only the last pass has threads past the 67 rows.
#pragma unroll
    for (unsigned pass = 0; pass < SKEW_PASSES_IN; pass++) {
        unsigned i = t + pass * SKEW_THREADS;
        unsigned s = i / SKEW_CHUNKS_IN, k = i % SKEW_CHUNKS_IN;
        if (pass + 1 < SKEW_PASSES_IN || s < SKEW_ROWS_IN) {
            unsigned a = (band - SKEW_BEFORE + s) * cols + tile_col;
            chunks[pass] = *reinterpret_cast<const float4*>(input + a - skew_misalignment(input, a) + 4 * k);
        }
    }
#pragma unroll
    for (unsigned pass = 0; pass < SKEW_PASSES_IN; pass++) {
        unsigned i = t + pass * SKEW_THREADS;
        unsigned s = i / SKEW_CHUNKS_IN, k = i % SKEW_CHUNKS_IN;
        if (pass + 1 < SKEW_PASSES_IN || s < SKEW_ROWS_IN) skew_stage(tile, s, k, chunks[pass]);
    }
    __syncthreads();
    // Every output chunk read before any is stored; a thread past the last output row works on
    // that row, and drops it.
    float4 out[SKEW_PASSES_OUT];
    unsigned at[SKEW_PASSES_OUT];
#pragma unroll
    for (unsigned pass = 0; pass < SKEW_PASSES_OUT; pass++) {
        unsigned i = t + pass * SKEW_THREADS;
        unsigned c = i / SKEW_CHUNKS_OUT, k = i % SKEW_CHUNKS_OUT;
        unsigned b = min(tile_col + c, cols - 1) * rows + band;
        unsigned epsilon = skew_misalignment(output, b);
        unsigned s = SKEW_BEFORE - epsilon + 4 * k;
        at[pass] = b - epsilon + 4 * k;
        float v[4];
#pragma unroll
        for (unsigned e = 0; e < 4; e++) {
            unsigned first = (band - SKEW_BEFORE + s + e) * cols + tile_col;
            v[e] = skew_element(tile, s + e, c, skew_misalignment(input, first));
        }
        out[pass] = make_float4(v[0], v[1], v[2], v[3]);
    }
#pragma unroll
    for (unsigned pass = 0; pass < SKEW_PASSES_OUT; pass++) {
        unsigned c = (t + pass * SKEW_THREADS) / SKEW_CHUNKS_OUT;
        if (tile_col + c < cols) *reinterpret_cast<float4*>(output + at[pass]) = out[pass];
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
        long long start = a - skew_misalignment(input, (unsigned)a) + 4 * k;
        float4 v;
        if (start >= 0 && start + 4 <= len) {
            v = *reinterpret_cast<const float4*>(input + start);
        } else {
            float e[4];
#pragma unroll
            for (int q = 0; q < 4; q++) e[q] = start + q >= 0 && start + q < len ? input[start + q] : 0.0f;
            v = make_float4(e[0], e[1], e[2], e[3]);
        }
        skew_stage(tile, s, k, v);
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
        float v[4];
#pragma unroll
        for (unsigned e = 0; e < 4; e++) {
            long long first = (j0 + e) * cols + tile_col;
            v[e] = j0 + e >= 0 && j0 + e < rows ? skew_element(tile, s + e, c, skew_misalignment(input, (unsigned)first)) : 0.0f;
        }
        if (j0 >= 0 && j0 + 3 < rows) {
            *reinterpret_cast<float4*>(output + start) = make_float4(v[0], v[1], v[2], v[3]);
        } else {
#pragma unroll
            for (unsigned e = 0; e < 4; e++) {
                if (j0 + e >= 0 && j0 + e < rows) output[start + e] = v[e];
            }
        }
    }
}

extern "C" __global__ void transpose_skewed_cuda(const float* input, size_t input_len, float* output, size_t output_len,
                                                 unsigned rows, unsigned cols) {
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
