// kernels::softmax::staged: the online pass with the row kept in shared memory (up to 8192).
#include "softmax.cuh"
#define STAGE 8192u
extern "C" __global__ void softmax_staged_cuda(const float* input, size_t input_len, float* output, size_t output_len,
                                               unsigned rows, unsigned cols) {
    extern __shared__ float row[];
    float *maxes = row + STAGE, *sums = maxes + WARPS;
    unsigned t = threadIdx.x;
    const float* src = input + (size_t)blockIdx.x * cols;
    float* dst = output + (size_t)blockIdx.x * cols;
    bool staged = cols <= STAGE;
    bool vector = cols % 4 == 0 && ((unsigned long long)src & 15) == 0 && ((unsigned long long)dst & 15) == 0;
    Running r = RUNNING_EMPTY;
    if (vector) {
        for (unsigned q = t; q < cols / 4; q += THREADS) {
            float4 v = ((const float4*)src)[q];
            float four[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (unsigned k = 0; k < 4; ++k) {
                r = running_add(r, four[k]);
                if (staged) row[4 * q + k] = four[k];
            }
        }
    } else {
        for (unsigned c = t; c < cols; c += THREADS) {
            float x = src[c];
            r = running_add(r, x);
            if (staged) row[c] = x;
        }
    }
    Running stats = block_running(maxes, sums, r);
    if (vector) {
        for (unsigned q = t; q < cols / 4; q += THREADS) {
            float four[4];
#pragma unroll
            for (unsigned k = 0; k < 4; ++k) {
                float x = staged ? row[4 * q + k] : src[4 * q + k];
                four[k] = fast_exp(x - stats.max) / stats.sum;
            }
            ((float4*)dst)[q] = make_float4(four[0], four[1], four[2], four[3]);
        }
    } else {
        for (unsigned c = t; c < cols; c += THREADS) {
            float x = staged ? row[c] : src[c];
            dst[c] = fast_exp(x - stats.max) / stats.sum;
        }
    }
}
