// kernels::scan::hillis_steele: a 256-element tile in 8 double-buffered steps; phase 1 adds prefixes.
#include "scan.cuh"
extern "C" __global__ void scan_hillis_steele_cuda(const float* input, size_t input_len, float* output,
                                                   size_t output_len, float* scratch, size_t scratch_len, unsigned n,
                                                   unsigned exclusive, unsigned phase) {
    unsigned t = threadIdx.x, tile = blockIdx.x, i = tile * THREADS + t;
    if (phase == 1) {
        if (i < n) output[i] = scratch[tile] + output[i];
        return;
    }
    extern __shared__ float rows[];
    rows[t] = i < n ? input[i] : 0.0f;
    unsigned from = 0;
    for (unsigned d = 1; d < THREADS; d *= 2) {
        __syncthreads();
        float sum = t >= d ? rows[from * THREADS + t - d] + rows[from * THREADS + t] : rows[from * THREADS + t];
        rows[(1 - from) * THREADS + t] = sum;
        from = 1 - from;
    }
    __syncthreads();
    float result = exclusive == 0 ? rows[from * THREADS + t] : (t == 0 ? 0.0f : rows[from * THREADS + t - 1]);
    if (i < n) output[i] = result;
    if (t == THREADS - 1) scratch[tile] = rows[from * THREADS + t];
}
