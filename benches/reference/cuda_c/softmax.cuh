// Pieces shared by the softmax twins (kernels::softmax): one block of 256 threads per row, e^x as
// ex2.approx.ftz of x·log2(e) (kernels::device::exp), running (maximum, sum) pairs.
#pragma once
#include <float.h>
#include <math.h>

#define THREADS 256u
#define WARPS (THREADS / 32u)

__device__ __forceinline__ float fast_exp(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x * 1.44269504088896340736f));
    return y;
}

struct Running {
    float max, sum;
};

// kernels::softmax::Running: empty is {-FLT_MAX, 0} (finite, so that -inf adds e^-inf = 0);
// +inf and NaN make the sum NaN.
#define RUNNING_EMPTY Running{-FLT_MAX, 0.0f}

__device__ __forceinline__ Running running_add(Running r, float x) {
    if (x > r.max) return {x, r.sum * fast_exp(r.max - x) + (1.0f + (x - x))};
    return {r.max, r.sum + fast_exp(x - r.max)};
}

// kernels::softmax::Running::merge: a sum of 0 saw nothing (or only -inf); a NaN sum stays NaN.
__device__ __forceinline__ Running running_merge(Running a, Running b) {
    if (b.sum == 0.0f) return a;
    if (a.sum == 0.0f) return b;
    float max = b.max > a.max ? b.max : a.max;
    return {max, a.sum * fast_exp(a.max - max) + b.sum * fast_exp(b.max - max)};
}

// kernels::softmax::block_running: butterfly per warp, warps' pairs through shared memory.
template <unsigned N = WARPS>
__device__ __forceinline__ Running block_running(float* maxes, float* sums, Running r) {
    for (unsigned mask = 16; mask > 0; mask /= 2)
        r = running_merge(r, {__shfl_xor_sync(0xffffffffu, r.max, mask), __shfl_xor_sync(0xffffffffu, r.sum, mask)});
    unsigned warp = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0) {
        maxes[warp] = r.max;
        sums[warp] = r.sum;
    }
    __syncthreads();
    Running all = RUNNING_EMPTY;
    for (unsigned w = 0; w < N; ++w) all = running_merge(all, {maxes[w], sums[w]});
    __syncthreads();
    return all;
}

template <unsigned N = WARPS>
__device__ __forceinline__ float block_max(float* maxes, float m) {
    for (unsigned mask = 16; mask > 0; mask /= 2) {
        float other = __shfl_xor_sync(0xffffffffu, m, mask);
        m = other > m ? other : m;
    }
    if (threadIdx.x % 32 == 0) maxes[threadIdx.x / 32] = m;
    __syncthreads();
    float all = -INFINITY;
    for (unsigned w = 0; w < N; ++w) all = maxes[w] > all ? maxes[w] : all;
    __syncthreads();
    return all;
}

template <unsigned N = WARPS>
__device__ __forceinline__ float block_sum(float* sums, float s) {
    for (unsigned mask = 16; mask > 0; mask /= 2) s += __shfl_xor_sync(0xffffffffu, s, mask);
    if (threadIdx.x % 32 == 0) sums[threadIdx.x / 32] = s;
    __syncthreads();
    float all = 0.0f;
    for (unsigned w = 0; w < N; ++w) all += sums[w];
    __syncthreads();
    return all;
}

// kernels::softmax::online::online_row: the block of T threads (N warps) takes the row in two reads.
template <unsigned T, unsigned N>
__device__ __forceinline__ void online_row(float* maxes, float* sums, const float* input, float* output, unsigned row,
                                           unsigned cols) {
    size_t base = (size_t)row * cols;
    Running r = RUNNING_EMPTY;
    for (unsigned c = threadIdx.x; c < cols; c += T) r = running_add(r, input[base + c]);
    Running stats = block_running<N>(maxes, sums, r);
    for (unsigned c = threadIdx.x; c < cols; c += T) output[base + c] = fast_exp(input[base + c] - stats.max) / stats.sum;
}

// kernels::softmax::registers::row_in_registers_as: the row in registers, V 16-byte vectors per
// thread of member `me` of a group; max_of and sum_of combine over the group; the path given
// (`vector`: both rows 16-byte aligned, cols a multiple of 4).
template <unsigned V, typename MaxOf, typename SumOf>
__device__ __forceinline__ void row_in_registers_as(const float* src, float* dst, unsigned cols, unsigned me,
                                                    unsigned group, bool vector, MaxOf max_of, SumOf sum_of) {
    float x[V][4];
#pragma unroll
    for (unsigned j = 0; j < V; ++j)
#pragma unroll
        for (unsigned k = 0; k < 4; ++k) x[j][k] = -INFINITY;
#pragma unroll
    for (unsigned j = 0; j < V; ++j) {
        if (vector) {
            unsigned q = me + group * j;
            if (q < cols / 4) {
                float4 v = ((const float4*)src)[q];
                x[j][0] = v.x; x[j][1] = v.y; x[j][2] = v.z; x[j][3] = v.w;
            }
        } else {
#pragma unroll
            for (unsigned k = 0; k < 4; ++k) {
                unsigned c = me + group * (4 * j + k);
                if (c < cols) x[j][k] = src[c];
            }
        }
    }
    float m = -INFINITY;
#pragma unroll
    for (unsigned j = 0; j < V; ++j)
#pragma unroll
        for (unsigned k = 0; k < 4; ++k) m = x[j][k] > m ? x[j][k] : m;
    m = max_of(m);
    float sum = 0.0f;
#pragma unroll
    for (unsigned j = 0; j < V; ++j) {
        if (!vector || me + group * j < cols / 4) {
#pragma unroll
            for (unsigned k = 0; k < 4; ++k) {
                float e = fast_exp(x[j][k] - m);
                x[j][k] = e;
                sum = sum + e;
            }
        }
    }
    float scale = 1.0f / sum_of(sum);
#pragma unroll
    for (unsigned j = 0; j < V; ++j) {
        if (vector) {
            unsigned q = me + group * j;
            if (q < cols / 4) ((float4*)dst)[q] = make_float4(x[j][0] * scale, x[j][1] * scale, x[j][2] * scale, x[j][3] * scale);
        } else {
#pragma unroll
            for (unsigned k = 0; k < 4; ++k) {
                unsigned c = me + group * (4 * j + k);
                if (c < cols) dst[c] = x[j][k] * scale;
            }
        }
    }
}

// kernels::softmax::registers::row_in_registers: the path chosen by the row's own alignment.
template <unsigned V, typename MaxOf, typename SumOf>
__device__ __forceinline__ void row_in_registers(const float* src, float* dst, unsigned cols, unsigned me,
                                                 unsigned group, MaxOf max_of, SumOf sum_of) {
    bool vector = cols % 4 == 0 && ((unsigned long long)src & 15) == 0 && ((unsigned long long)dst & 15) == 0;
    row_in_registers_as<V>(src, dst, cols, me, group, vector, max_of, sum_of);
}
