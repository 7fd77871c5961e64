// out = a + b in float4s, two per array per thread a block apart, loads before adds; the last
// n % 4 elements by block 0; unaligned arrays one element at a time, grid-strided
// (kernels::vec_add::vectorized).
#define BLOCK 256
#define QUADS 2

__device__ __forceinline__ float4 add4(float4 p, float4 q) {
    return make_float4(p.x + q.x, p.y + q.y, p.z + q.z, p.w + q.w);
}

extern "C" __global__ void vec_add_vectorized_cuda(const float* a, size_t a_len, const float* b, size_t b_len, float* out,
                                                   size_t out_len, unsigned n) {
    unsigned t = threadIdx.x;
    unsigned first = blockIdx.x * BLOCK * QUADS + t;
    bool aligned = ((reinterpret_cast<size_t>(a) | reinterpret_cast<size_t>(b) | reinterpret_cast<size_t>(out)) & 15) == 0;
    if (aligned) {
        unsigned quads = n / 4;
        const float4* a4 = reinterpret_cast<const float4*>(a);
        const float4* b4 = reinterpret_cast<const float4*>(b);
        float4* out4 = reinterpret_cast<float4*>(out);
        if (first + (QUADS - 1) * BLOCK < quads) {
            float4 x[QUADS], y[QUADS];
#pragma unroll
            for (unsigned k = 0; k < QUADS; ++k) {
                x[k] = a4[first + k * BLOCK];
                y[k] = b4[first + k * BLOCK];
            }
#pragma unroll
            for (unsigned k = 0; k < QUADS; ++k) out4[first + k * BLOCK] = add4(x[k], y[k]);
        } else {
#pragma unroll
            for (unsigned k = 0; k < QUADS; ++k) {
                unsigned quad = first + k * BLOCK;
                if (quad < quads) out4[quad] = add4(a4[quad], b4[quad]);
            }
        }
        unsigned tail = 4 * quads + t;
        if (blockIdx.x == 0 && tail < n) out[tail] = a[tail] + b[tail];
    } else {
        for (unsigned i = blockIdx.x * BLOCK + t; i < n; i += gridDim.x * BLOCK) out[i] = a[i] + b[i];
    }
}
