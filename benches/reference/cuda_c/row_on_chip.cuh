// kernels::softmax::on_chip: a row held on chip by a block of 1024 between its statistics and
// its outputs: 6 vectors a thread in registers, the next 10 in shared memory by cp.async, the
// elements before the first 16-byte boundary and after the last vector one a thread; past 65536
// columns the rest streamed (a running pair) and read again for its outputs. Each thread's sum from
// its own maximum, the pairs merged over the block. Shared by softmax_wide_staged and
// cross_entropy_fused.
#pragma once
#include "cross_entropy.cuh"
#define F_THREADS 1024u
#define F_WARPS 32u
#define F_VECTORS 6u
#define F_STAGED 10u
#define F_REGISTER_SPAN (F_THREADS * F_VECTORS)
#define F_ON_CHIP_SPAN (F_THREADS * (F_VECTORS + F_STAGED))
#define F_BATCH 4u

// kernels::softmax::on_chip::Staging: the staged vectors, then 32 maxima, 32 sums and one word.
#define F_SHARED_BYTES (F_STAGED * F_THREADS * 16u + 2u * F_WARPS * 4u + 4u)

// kernels::softmax::on_chip::stream: the streamed vectors of thread t, four loads in flight.
template <typename See>
__device__ __forceinline__ void stream(const float* src, unsigned head, unsigned vectors, unsigned t, See see) {
    unsigned v = F_ON_CHIP_SPAN + t;
    for (; v + (F_BATCH - 1) * F_THREADS < vectors; v += F_BATCH * F_THREADS) {
        float4 x[F_BATCH];
#pragma unroll
        for (unsigned i = 0; i < F_BATCH; ++i) x[i] = *(const float4*)(src + head + 4 * (v + i * F_THREADS));
#pragma unroll
        for (unsigned i = 0; i < F_BATCH; ++i) see(v + i * F_THREADS, x[i]);
    }
    for (; v < vectors; v += F_THREADS) see(v, *(const float4*)(src + head + 4 * v));
}

// kernels::softmax::on_chip::row_on_chip: the row's merged (max, sum), and f(c, x) into dst for
// each element, f = make(those statistics).
template <typename Make>
__device__ __forceinline__ Running row_on_chip(const float* src, float* dst, unsigned cols, float4* staged,
                                               float* maxes, float* sums, Make make) {
    unsigned t = threadIdx.x;
    unsigned head, vectors;
    split(src, cols, head, vectors);
#pragma unroll
    for (unsigned j = 0; j < F_STAGED; ++j) {
        unsigned v = F_REGISTER_SPAN + t + F_THREADS * j;
        if (v < vectors) {
            unsigned address = (unsigned)__cvta_generic_to_shared(staged + j * F_THREADS + t);
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(address), "l"(src + head + 4 * v));
        }
    }
    asm volatile("cp.async.commit_group;");
    Running running = RUNNING_EMPTY;
    stream(src, head, vectors, t, [&](unsigned, float4 x) {
        running = running_add(running, x.x);
        running = running_add(running, x.y);
        running = running_add(running, x.z);
        running = running_add(running, x.w);
    });
    float4 x[F_VECTORS];
#pragma unroll
    for (unsigned i = 0; i < F_VECTORS; ++i) {
        unsigned v = t + F_THREADS * i;
        x[i] = v < vectors ? *(const float4*)(src + head + 4 * v) : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
    }
    unsigned first = t, last_column = head + 4 * vectors + t;
    auto edge = [&](unsigned which) {
        if (which == 0) return first < head ? src[first] : -INFINITY;
        return last_column < cols ? src[last_column] : -INFINITY;
    };
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    auto larger = [](float m, float v) { return v > m ? v : m; };
    float m = larger(larger(running.max, edge(0)), edge(1));
#pragma unroll
    for (unsigned i = 0; i < F_VECTORS; ++i) m = larger(larger(larger(larger(m, x[i].x), x[i].y), x[i].z), x[i].w);
#pragma unroll
    for (unsigned j = 0; j < F_STAGED; ++j)
        if (F_REGISTER_SPAN + t + F_THREADS * j < vectors) {
            float4 s = staged[j * F_THREADS + t];
            m = larger(larger(larger(larger(m, s.x), s.y), s.z), s.w);
        }
    float sum = running.sum * fast_exp(running.max - m);
    sum += fast_exp(edge(0) - m);
    sum += fast_exp(edge(1) - m);
#pragma unroll
    for (unsigned i = 0; i < F_VECTORS; ++i)
        if (t + F_THREADS * i < vectors) {
            sum += fast_exp(x[i].x - m);
            sum += fast_exp(x[i].y - m);
            sum += fast_exp(x[i].z - m);
            sum += fast_exp(x[i].w - m);
        }
#pragma unroll
    for (unsigned j = 0; j < F_STAGED; ++j)
        if (F_REGISTER_SPAN + t + F_THREADS * j < vectors) {
            float4 s = staged[j * F_THREADS + t];
            sum += fast_exp(s.x - m);
            sum += fast_exp(s.y - m);
            sum += fast_exp(s.z - m);
            sum += fast_exp(s.w - m);
        }
    Running merged = block_running<F_WARPS>(maxes, sums, {m, sum});
    auto f = make(merged);
    if (((size_t)src - (size_t)dst) % 16 != 0) {
        map_row<F_THREADS>(src, dst, cols, t, f);
    } else {
        auto four = [&](unsigned v, float4 y) {
            unsigned c = head + 4 * v;
            return make_float4(f(c, y.x), f(c + 1, y.y), f(c + 2, y.z), f(c + 3, y.w));
        };
#pragma unroll
        for (unsigned i = 0; i < F_VECTORS; ++i) {
            unsigned v = t + F_THREADS * i;
            if (v < vectors) *(float4*)(dst + head + 4 * v) = four(v, x[i]);
        }
        if (first < head) dst[first] = f(first, edge(0));
        if (last_column < cols) dst[last_column] = f(last_column, edge(1));
#pragma unroll
        for (unsigned j = 0; j < F_STAGED; ++j) {
            unsigned v = F_REGISTER_SPAN + t + F_THREADS * j;
            if (v < vectors) *(float4*)(dst + head + 4 * v) = four(v, staged[j * F_THREADS + t]);
        }
        stream(src, head, vectors, t, [&](unsigned v, float4 y) { *(float4*)(dst + head + 4 * v) = four(v, y); });
    }
    return merged;
}
