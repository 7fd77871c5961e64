// Pieces shared by the cross-entropy twins (kernels::cross_entropy): a warp per row up to 1024
// classes (eight rows per block of 256), a block per row beyond, the row walked 16 bytes a load
// from its first 16-byte boundary (kernels::cross_entropy::walk).
#pragma once
#include "element.cuh"
#include "softmax.cuh"

// ln x as kernels::device::ln: lg2.approx.ftz of x, times ln 2 (not contracted into a later add).
__device__ __forceinline__ float fast_ln(float x) {
    float y;
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return __fmul_rn(y, 0.693147180559945309417f);
}

#define CE_WARP_COLS 1024u

// kernels::softmax::warp_running: the butterfly of block_running alone.
__device__ __forceinline__ Running warp_running(Running r) {
    for (unsigned mask = 16; mask > 0; mask /= 2)
        r = running_merge(r, {__shfl_xor_sync(0xffffffffu, r.max, mask), __shfl_xor_sync(0xffffffffu, r.sum, mask)});
    return r;
}

__device__ __forceinline__ bool in_range(long long target, unsigned cols) { return target >= 0 && target < (long long)cols; }

// kernels::cross_entropy::walk::split: elements before the first 16-byte boundary, then vectors
// of Element<E>::LANES.
template <class E>
__device__ __forceinline__ void split(const E* p, unsigned cols, unsigned& head, unsigned& vectors) {
    constexpr unsigned L = Element<E>::LANES;
    unsigned offset = (unsigned)(((size_t)p / sizeof(E)) % L);
    head = min((L - offset) % L, cols);
    vectors = (cols - head) / L;
}

// kernels::cross_entropy::walk::read_row.
template <unsigned T, class E, typename Visit>
__device__ __forceinline__ void read_row(const E* row, unsigned cols, unsigned t, Visit visit) {
    constexpr unsigned L = Element<E>::LANES;
    unsigned head, vectors;
    split(row, cols, head, vectors);
    if (t < head) visit(t, Element<E>::to_f32(row[t]));
    for (unsigned v = t; v < vectors; v += T) {
        unsigned c = head + L * v;
        float x[8];
        Element<E>::load(row + c, x);
#pragma unroll
        for (unsigned k = 0; k < L; ++k) visit(c + k, x[k]);
    }
    unsigned c = head + L * vectors + t;
    if (c < cols) visit(c, Element<E>::to_f32(row[c]));
}

// kernels::cross_entropy::walk::map_row.
template <unsigned T, class E, typename F>
__device__ __forceinline__ void map_row(const E* src, E* dst, unsigned cols, unsigned t, F f) {
    constexpr unsigned L = Element<E>::LANES;
    auto one = [&](unsigned c) { dst[c] = Element<E>::from_f32(f(c, Element<E>::to_f32(src[c]))); };
    if (((size_t)src - (size_t)dst) % 16 != 0) {
        for (unsigned c = t; c < cols; c += T) one(c);
        return;
    }
    unsigned head, vectors;
    split(src, cols, head, vectors);
    if (t < head) one(t);
    for (unsigned v = t; v < vectors; v += T) {
        unsigned c = head + L * v;
        float x[8];
        Element<E>::load(src + c, x);
#pragma unroll
        for (unsigned k = 0; k < L; ++k) x[k] = f(c + k, x[k]);
        Element<E>::store(dst + c, x);
    }
    unsigned c = head + L * vectors + t;
    if (c < cols) one(c);
}

// kernels::cross_entropy::walk::fill_row.
template <unsigned T, class E>
__device__ __forceinline__ void fill_row(E* dst, unsigned cols, unsigned t, float value) {
    constexpr unsigned L = Element<E>::LANES;
    unsigned head, vectors;
    split<E>(dst, cols, head, vectors);
    E element = Element<E>::from_f32(value);
    float values[8] = {value, value, value, value, value, value, value, value};
    if (t < head) dst[t] = element;
    for (unsigned v = t; v < vectors; v += T) Element<E>::store(dst + head + L * v, values);
    unsigned c = head + L * vectors + t;
    if (c < cols) dst[c] = element;
}

// kernels::cross_entropy::forward::total_by_last_block: every block takes a ticket after its
// barrier and fence; the last one adds the losses in row order and counts the rows (the count
// stored before the sum is taken), then leaves the ticket at zero. T threads in W warps, all calling.
template <unsigned T, unsigned W>
__device__ __forceinline__ void total_by_last_block(float* sums, unsigned* last, const float* losses,
                                                    const long long* targets, float* total, unsigned* ticket,
                                                    unsigned rows, long long ignore_index, unsigned mean) {
    unsigned t = threadIdx.x;
    __syncthreads();
    if (t == 0) {
        __threadfence();
        *last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (*last) {
        __threadfence();
        float sum = 0.0f, count = 0.0f;
        for (unsigned r = t; r < rows; r += T) {
            sum += __int_as_float(__ldcg((const int*)losses + r));
            if (targets[r] != ignore_index) count += 1.0f;
        }
        count = block_sum<W>(sums, count);
        if (t == 0) total[1] = count;
        sum = block_sum<W>(sums, sum);
        if (t == 0) {
            total[0] = mean != 0 ? __fdiv_rn(sum, count) : sum;
            *(volatile unsigned*)ticket = 0;
        }
    }
}
