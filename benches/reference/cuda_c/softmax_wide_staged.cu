// kernels::softmax::wide_staged: a row past a 1024-thread block's registers read once: 24576
// columns in registers (6 vectors a thread), the next 40960 in shared memory filled by cp.async
// while the register loads are in flight, each thread reading back only its own copies; the
// online pass (two reads) beyond 65536 columns.
#include "softmax.cuh"
#define STAGED_THREADS 1024u
#define STAGED_WARPS 32u
#define STAGED_VECTORS_REG 6u
#define REGISTER_COLS (STAGED_THREADS * 4u * STAGED_VECTORS_REG)
#define STAGED_SLOTS 40u
#define STAGED_COLS (STAGED_THREADS * STAGED_SLOTS)

// kernels::softmax::wide_staged::slot: (shared index, column of the staged part) of thread t's
// slot s: lane s % 4 of vector t + 1024·(s / 4) on the vector path, t + 1024·s on the scalar one.
template <bool VECTOR>
__device__ __forceinline__ void staged_slot(unsigned t, unsigned s, unsigned* at, unsigned* column) {
    if (VECTOR) {
        unsigned element = 4u * (t + STAGED_THREADS * (s / 4u));
        *at = element + s % 4u;
        *column = element + s % 4u;
    } else {
        *at = s * STAGED_THREADS + t;
        *column = t + STAGED_THREADS * s;
    }
}

template <bool VECTOR>
__device__ __forceinline__ void staged_row(const float* src, float* dst, unsigned cols, float* staged, float* maxes,
                                           float* sums) {
    unsigned t = threadIdx.x, rest = cols - REGISTER_COLS;
    const float* src_rest = src + REGISTER_COLS;
    float* dst_rest = dst + REGISTER_COLS;
    if (VECTOR) {
        for (unsigned i = 0; i < STAGED_SLOTS / 4u; ++i) {
            unsigned at, column;
            staged_slot<true>(t, 4u * i, &at, &column);
            if (column < rest) {
                unsigned address = (unsigned)__cvta_generic_to_shared(staged + at);
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(address), "l"(src_rest + column));
            }
        }
    } else {
        for (unsigned s = 0; s < STAGED_SLOTS; ++s) {
            unsigned at, column;
            staged_slot<false>(t, s, &at, &column);
            bool inside = column < rest;
            unsigned address = (unsigned)__cvta_generic_to_shared(staged + at);
            asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(address),
                         "l"(src_rest + (inside ? column : 0u)), "r"(inside ? 4 : 0));
        }
    }
    asm volatile("cp.async.commit_group;");
    float row_max = 0.0f, row_sum = 0.0f;
    row_in_registers<STAGED_VECTORS_REG>(
        src, dst, REGISTER_COLS, t, STAGED_THREADS,
        [&](float m) {
            asm volatile("cp.async.wait_group 0;" ::: "memory");
            for (unsigned s = 0; s < STAGED_SLOTS; ++s) {
                unsigned at, column;
                staged_slot<VECTOR>(t, s, &at, &column);
                if (column < rest) {
                    float x = staged[at];
                    m = x > m ? x : m;
                }
            }
            row_max = block_max<STAGED_WARPS>(maxes, m);
            return row_max;
        },
        [&](float sum) {
            for (unsigned s = 0; s < STAGED_SLOTS; ++s) {
                unsigned at, column;
                staged_slot<VECTOR>(t, s, &at, &column);
                if (column < rest) {
                    float e = fast_exp(staged[at] - row_max);
                    staged[at] = e;
                    sum += e;
                }
            }
            row_sum = block_sum<STAGED_WARPS>(sums, sum);
            return row_sum;
        });
    float scale = 1.0f / row_sum;
    if (VECTOR) {
        for (unsigned i = 0; i < STAGED_SLOTS / 4u; ++i) {
            unsigned at, column;
            staged_slot<true>(t, 4u * i, &at, &column);
            if (column < rest) {
                float4 e = *(const float4*)(staged + at);
                *(float4*)(dst_rest + column) = make_float4(e.x * scale, e.y * scale, e.z * scale, e.w * scale);
            }
        }
    } else {
        for (unsigned s = 0; s < STAGED_SLOTS; ++s) {
            unsigned at, column;
            staged_slot<false>(t, s, &at, &column);
            if (column < rest) dst_rest[column] = staged[at] * scale;
        }
    }
}

extern "C" __global__ void __launch_bounds__(1024, 1)
    softmax_wide_staged_cuda(const float* input, size_t input_len, float* output, size_t output_len, unsigned rows,
                             unsigned cols) {
    extern __shared__ float shared[];
    // As kernels::softmax::wide_staged::Staged: the staged columns, 32 maxima, 32 sums.
    float *staged = shared, *maxes = shared + STAGED_COLS, *sums = maxes + 32;
    unsigned t = threadIdx.x;
    size_t base = (size_t)blockIdx.x * cols;
    const float* src = input + base;
    float* dst = output + base;
    if (cols <= REGISTER_COLS) {
        row_in_registers<STAGED_VECTORS_REG>(src, dst, cols, t, STAGED_THREADS,
                                             [&](float m) { return block_max<STAGED_WARPS>(maxes, m); },
                                             [&](float s) { return block_sum<STAGED_WARPS>(sums, s); });
    } else if (cols <= REGISTER_COLS + STAGED_COLS) {
        bool vector = cols % 4 == 0 && ((unsigned long long)src & 15) == 0 && ((unsigned long long)dst & 15) == 0;
        if (vector)
            staged_row<true>(src, dst, cols, staged, maxes, sums);
        else
            staged_row<false>(src, dst, cols, staged, maxes, sums);
    } else {
        online_row<1024, 32>(maxes, sums, input, output, blockIdx.x, cols);
    }
}
