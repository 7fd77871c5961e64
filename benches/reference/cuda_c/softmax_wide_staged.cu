// kernels::softmax::wide_staged: a row past a 1024-thread block's registers: up to 24576 columns
// in registers (6 vectors a thread), longer rows held on chip (row_on_chip.cuh: registers and
// shared memory, past 65536 columns the rest read twice), one reciprocal per row.
#include "row_on_chip.cuh"
#define REGISTER_COLS (F_THREADS * 4u * F_VECTORS)

extern "C" __global__ void __launch_bounds__(1024, 1)
    softmax_wide_staged_cuda(const float* input, size_t input_len, float* output, size_t output_len, unsigned rows,
                             unsigned cols) {
    extern __shared__ float4 staged[];
    float* maxes = (float*)(staged + F_STAGED * F_THREADS);
    float* sums = maxes + F_WARPS;
    unsigned t = threadIdx.x;
    size_t base = (size_t)blockIdx.x * cols;
    const float* src = input + base;
    float* dst = output + base;
    if (cols <= REGISTER_COLS) {
        row_in_registers<F_VECTORS>(src, dst, cols, t, F_THREADS, [&](float m) { return block_max<F_WARPS>(maxes, m); },
                                    [&](float s) { return block_sum<F_WARPS>(sums, s); });
    } else {
        row_on_chip(src, dst, cols, staged, maxes, sums, [&](Running r) {
            float mx = r.max, scale = 1.0f / r.sum;
            return [=](unsigned, float v) { return fast_exp(v - mx) * scale; };
        });
    }
}
