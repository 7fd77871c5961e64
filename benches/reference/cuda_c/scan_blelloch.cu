// kernels::scan::blelloch: a 512-element tile, up-sweep and down-sweep, one padding word per 32.
#include "scan.cuh"
#define TILE_512 (2 * THREADS)
__device__ __forceinline__ unsigned padded(unsigned i) { return i + (i >> 5); }
extern "C" __global__ void scan_blelloch_cuda(const float* input, size_t input_len, float* output, size_t output_len,
                                              float* scratch, size_t scratch_len, unsigned n, unsigned exclusive,
                                              unsigned phase) {
    unsigned t = threadIdx.x, tile = blockIdx.x, base = tile * TILE_512;
    unsigned a = base + t, b = base + t + THREADS < base ? 0xffffffffu : base + t + THREADS;
    if (phase == 1) {
        float prefix = scratch[tile];
        if (a < n) output[a] = prefix + output[a];
        if (b < n) output[b] = prefix + output[b];
        return;
    }
    extern __shared__ float values[];
    float x_a = a < n ? input[a] : 0.0f, x_b = b < n ? input[b] : 0.0f;
    values[padded(t)] = x_a;
    values[padded(t + THREADS)] = x_b;
    unsigned offset = 1;
    for (unsigned d = THREADS; d > 0; d /= 2) {
        __syncthreads();
        if (t < d) {
            unsigned left = offset * (2 * t + 1) - 1, right = offset * (2 * t + 2) - 1;
            values[padded(right)] = values[padded(left)] + values[padded(right)];
        }
        offset *= 2;
    }
    if (t == 0) {
        unsigned last = padded(TILE_512 - 1);
        scratch[tile] = values[last];
        values[last] = 0.0f;
    }
    for (unsigned d = 1; d < TILE_512; d *= 2) {
        offset /= 2;
        __syncthreads();
        if (t < d) {
            unsigned left = offset * (2 * t + 1) - 1, right = offset * (2 * t + 2) - 1;
            float l = values[padded(left)], r = values[padded(right)];
            values[padded(left)] = r;
            values[padded(right)] = l + r;
        }
    }
    __syncthreads();
    float e_a = values[padded(t)], e_b = values[padded(t + THREADS)];
    if (a < n) output[a] = exclusive == 0 ? e_a + x_a : e_a;
    if (b < n) output[b] = exclusive == 0 ? e_b + x_b : e_b;
}
