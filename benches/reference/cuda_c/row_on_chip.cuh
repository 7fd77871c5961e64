// kernels::softmax::on_chip: a row of E (f32, or bf16 as its bits) held on chip by a block of 1024
// between its statistics and its outputs: 6 vectors a thread in registers (4 of bf16), the next 10
// in shared memory by cp.async, the
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
#define F_BF16_VECTORS 4u
#define F_BATCH 4u

// kernels::softmax::on_chip::register_vectors and the spans it gives.
template <class E>
__device__ __forceinline__ constexpr unsigned f_vectors() { return Element<E>::LANES == 4 ? F_VECTORS : F_BF16_VECTORS; }
template <class E>
__device__ __forceinline__ constexpr unsigned f_register_span() { return F_THREADS * f_vectors<E>(); }
template <class E>
__device__ __forceinline__ constexpr unsigned f_on_chip_span() { return F_THREADS * (f_vectors<E>() + F_STAGED); }

// kernels::softmax::on_chip::Staging: the staged vectors, then 32 maxima, 32 sums and one word.
#define F_SHARED_BYTES (F_STAGED * F_THREADS * 16u + 2u * F_WARPS * 4u + 4u)

// kernels::softmax::on_chip::stream: the streamed vectors of thread t, four loads in flight.
template <class E, typename See>
__device__ __forceinline__ void stream(const E* src, unsigned head, unsigned vectors, unsigned t, See see) {
    constexpr unsigned L = Element<E>::LANES;
    unsigned v = f_on_chip_span<E>() + t;
    for (; v + (F_BATCH - 1) * F_THREADS < vectors; v += F_BATCH * F_THREADS) {
        float4 x[F_BATCH];
#pragma unroll
        for (unsigned i = 0; i < F_BATCH; ++i) x[i] = *(const float4*)(src + head + L * (v + i * F_THREADS));
#pragma unroll
        for (unsigned i = 0; i < F_BATCH; ++i) see(v + i * F_THREADS, x[i]);
    }
    for (; v < vectors; v += F_THREADS) see(v, *(const float4*)(src + head + L * v));
}

// Calls f with each of a raw vector's values, widened.
template <class E, typename F>
__device__ __forceinline__ void each(float4 raw, F f) {
    float x[8];
    widen<E>(raw, x);
#pragma unroll
    for (unsigned k = 0; k < Element<E>::LANES; ++k) f(x[k]);
}

// kernels::softmax::on_chip::Held: a row's place against 16-byte boundaries, this thread's
// register vectors of it as loaded, and its elements before the first boundary and after the
// last vector (−∞ where none).
struct Held {
    unsigned head, vectors;
    float4 x[F_VECTORS];
    float edges[2];
};

// kernels::softmax::on_chip::issue_staged: this thread's staged vectors' copies, one group.
template <class E>
__device__ __forceinline__ void issue_staged(const E* src, const Held& h, float4* staged, unsigned t) {
    constexpr unsigned L = Element<E>::LANES;
#pragma unroll
    for (unsigned j = 0; j < F_STAGED; ++j) {
        unsigned v = f_register_span<E>() + t + F_THREADS * j;
        if (v < h.vectors) {
            unsigned address = (unsigned)__cvta_generic_to_shared(staged + j * F_THREADS + t);
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(address), "l"(src + h.head + L * v));
        }
    }
    asm volatile("cp.async.commit_group;");
}

// kernels::softmax::on_chip::edges: this thread's element before the first boundary (which 0)
// and after the last vector (which 1), −∞ where there is none.
template <class E>
__device__ __forceinline__ float edge_of(const E* src, const Held& h, unsigned cols, unsigned t, unsigned which) {
    unsigned last_column = h.head + Element<E>::LANES * h.vectors + t;
    if (which == 0) return t < h.head ? Element<E>::to_f32(src[t]) : -INFINITY;
    return last_column < cols ? Element<E>::to_f32(src[last_column]) : -INFINITY;
}

// kernels::softmax::on_chip::load_registers: this thread's register vectors (−∞ past the row)
// and its two edge elements.
template <class E>
__device__ __forceinline__ void load_registers(const E* src, unsigned cols, Held& h, unsigned t) {
    constexpr unsigned L = Element<E>::LANES;
    // −∞ in every lane of either type: f32's bits, or bf16's 0xff80 in both halves.
    float negative = L == 4 ? -INFINITY : __uint_as_float(0xff80ff80u);
#pragma unroll
    for (unsigned i = 0; i < f_vectors<E>(); ++i) {
        unsigned v = t + F_THREADS * i;
        h.x[i] = v < h.vectors ? *(const float4*)(src + h.head + L * v) : make_float4(negative, negative, negative, negative);
    }
    h.edges[0] = edge_of(src, h, cols, t, 0);
    h.edges[1] = edge_of(src, h, cols, t, 1);
}

// kernels::softmax::on_chip::load: the staged copies and the register vectors of row src.
template <class E>
__device__ __forceinline__ Held on_chip_load(const E* src, unsigned cols, float4* staged) {
    Held h;
    split(src, cols, h.head, h.vectors);
    issue_staged(src, h, staged, threadIdx.x);
    load_registers(src, cols, h, threadIdx.x);
    return h;
}

// kernels::softmax::on_chip::statistics: the row's (max, sum) merged over the block with running
// (the streamed part's pair, or RUNNING_EMPTY), after this thread's staged copies land.
template <class E>
__device__ __forceinline__ Running on_chip_statistics(const Held& h, const float4* staged, float* maxes, float* sums,
                                                      Running running) {
    constexpr unsigned REGISTER_SPAN = f_register_span<E>();
    unsigned t = threadIdx.x;
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    auto larger = [](float m, float v) { return v > m ? v : m; };
    float m = larger(larger(running.max, h.edges[0]), h.edges[1]);
#pragma unroll
    for (unsigned i = 0; i < f_vectors<E>(); ++i) each<E>(h.x[i], [&](float v) { m = larger(m, v); });
#pragma unroll
    for (unsigned j = 0; j < F_STAGED; ++j)
        if (REGISTER_SPAN + t + F_THREADS * j < h.vectors) each<E>(staged[j * F_THREADS + t], [&](float v) { m = larger(m, v); });
    float sum = running.sum * fast_exp(running.max - m);
    sum += fast_exp(h.edges[0] - m);
    sum += fast_exp(h.edges[1] - m);
#pragma unroll
    for (unsigned i = 0; i < f_vectors<E>(); ++i)
        if (t + F_THREADS * i < h.vectors) each<E>(h.x[i], [&](float v) { sum += fast_exp(v - m); });
#pragma unroll
    for (unsigned j = 0; j < F_STAGED; ++j)
        if (REGISTER_SPAN + t + F_THREADS * j < h.vectors)
            each<E>(staged[j * F_THREADS + t], [&](float v) { sum += fast_exp(v - m); });
    return block_running<F_WARPS>(maxes, sums, {m, sum});
}

// kernels::softmax::on_chip::write: f(c, x) into dst for each element of the row, the held part
// from chip and (STREAMED: rows past the chip) the rest read again.
template <class E, bool STREAMED, typename F>
__device__ __forceinline__ void on_chip_write(const E* src, E* dst, unsigned cols, const Held& h, const float4* staged, F f) {
    constexpr unsigned L = Element<E>::LANES, REGISTER_SPAN = f_register_span<E>();
    unsigned t = threadIdx.x;
    if (((size_t)src - (size_t)dst) % 16 != 0) {
        map_row<F_THREADS>(src, dst, cols, t, f);
        return;
    }
    auto put = [&](unsigned v, float4 raw) {
        unsigned c = h.head + L * v;
        *(float4*)(dst + c) = map_raw<E>(raw, [&](unsigned k, float y) { return f(c + k, y); });
    };
#pragma unroll
    for (unsigned i = 0; i < f_vectors<E>(); ++i) {
        unsigned v = t + F_THREADS * i;
        if (v < h.vectors) put(v, h.x[i]);
    }
    unsigned last_column = h.head + L * h.vectors + t;
    if (t < h.head) dst[t] = Element<E>::from_f32(f(t, h.edges[0]));
    if (last_column < cols) dst[last_column] = Element<E>::from_f32(f(last_column, h.edges[1]));
#pragma unroll
    for (unsigned j = 0; j < F_STAGED; ++j) {
        unsigned v = REGISTER_SPAN + t + F_THREADS * j;
        if (v < h.vectors) put(v, staged[j * F_THREADS + t]);
    }
    if (STREAMED) stream(src, h.head, h.vectors, t, put);
}

// kernels::softmax::on_chip::row_on_chip: the row's merged (max, sum), and f(c, x) into dst for
// each element, f = make(those statistics).
template <class E, typename Make>
__device__ __forceinline__ Running row_on_chip(const E* src, E* dst, unsigned cols, float4* staged, float* maxes,
                                               float* sums, Make make) {
    unsigned t = threadIdx.x;
    Held h;
    split(src, cols, h.head, h.vectors);
    // The staged copies first, to travel beside everything else; then the streamed part's running
    // pair (rows within the chip have none), then the register vectors.
    issue_staged(src, h, staged, t);
    Running running = RUNNING_EMPTY;
    stream(src, h.head, h.vectors, t, [&](unsigned, float4 x) { each<E>(x, [&](float v) { running = running_add(running, v); }); });
    load_registers(src, cols, h, t);
    Running merged = on_chip_statistics<E>(h, staged, maxes, sums, running);
    on_chip_write<E, true>(src, dst, cols, h, staged, make(merged));
    return merged;
}
