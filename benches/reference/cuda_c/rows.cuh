// Pieces shared by the row-reduction twins (kernels::rows): a block of 256 threads per row, or a
// warp per row (8 per block), or a block per piece of a row; SUM or MAX as the combining operation
// (kernels::reduce::Combine).
#pragma once
#include <math.h>

#define THREADS 256u
#define WARPS (THREADS / 32u)

struct SumOp {
    static __device__ __forceinline__ float identity() { return 0.0f; }
    static __device__ __forceinline__ float combine(float a, float b) { return a + b; }
};

struct MaxOp {
    static __device__ __forceinline__ float identity() { return -INFINITY; }
    // NaN when either is, as the Rust twin: one max.NaN.f32 (b > a alone drops a NaN that comes
    // second; fmaxf drops any).
    static __device__ __forceinline__ float combine(float a, float b) {
        float larger;
        asm("max.NaN.f32 %0, %1, %2;" : "=f"(larger) : "f"(a), "f"(b));
        return larger;
    }
};

template <typename Op>
__device__ __forceinline__ float warp_combine(float value) {
    for (unsigned mask = 16; mask > 0; mask /= 2) value = Op::combine(value, __shfl_xor_sync(0xffffffffu, value, mask));
    return value;
}

template <typename Op>
__device__ __forceinline__ void row_block(const float* input, float* output, unsigned cols) {
    extern __shared__ float partials[];
    unsigned row = blockIdx.x, t = threadIdx.x, warp = t / 32, lane = t % 32;
    size_t base = (size_t)row * cols;
    float mine = Op::identity();
    for (unsigned c = t; c < cols; c += THREADS) mine = Op::combine(mine, input[base + c]);
    float value = warp_combine<Op>(mine);
    if (lane == 0) partials[warp] = value;
    __syncthreads();
    if (warp == 0) {
        float total = warp_combine<Op>(lane < WARPS ? partials[lane] : Op::identity());
        if (t == 0) output[row] = total;
    }
}

// kernels::rows::warp::narrow_rows: rows of up to 16 columns by groups of G lanes, a lane an
// element, each warp NARROW_BATCHES batches of 32 / G rows at once, then a grid's warps further.
#define NARROW_COLS 16u
#define NARROW_BATCHES 4u

template <typename Op, unsigned G>
__device__ __forceinline__ void narrow_rows(const float* input, float* output, unsigned rows, unsigned cols) {
    unsigned lane = threadIdx.x % 32, per_warp = 32 / G, me = lane % G;
    unsigned batches = (rows + per_warp - 1) / per_warp;
    for (unsigned batch = (blockIdx.x * WARPS + threadIdx.x / 32) * NARROW_BATCHES; batch < batches;
         batch += gridDim.x * WARPS * NARROW_BATCHES) {
        float x[NARROW_BATCHES];
#pragma unroll
        for (unsigned i = 0; i < NARROW_BATCHES; ++i) {
            size_t row = (size_t)(batch + i) * per_warp + lane / G;
            x[i] = row < rows && me < cols ? input[row * cols + me] : Op::identity();
        }
#pragma unroll
        for (unsigned i = 0; i < NARROW_BATCHES; ++i) {
            float total = x[i];
            for (unsigned mask = G / 2; mask > 0; mask /= 2) total = Op::combine(total, __shfl_xor_sync(0xffffffffu, total, mask));
            size_t row = (size_t)(batch + i) * per_warp + lane / G;
            if (me == 0 && row < rows) output[row] = total;
        }
    }
}

template <typename Op>
__device__ __forceinline__ void row_warp(const float* input, float* output, unsigned rows, unsigned cols) {
    if (cols <= NARROW_COLS) {
        if (cols == 1) narrow_rows<Op, 1>(input, output, rows, cols);
        else if (cols == 2) narrow_rows<Op, 2>(input, output, rows, cols);
        else if (cols <= 4) narrow_rows<Op, 4>(input, output, rows, cols);
        else if (cols <= 8) narrow_rows<Op, 8>(input, output, rows, cols);
        else narrow_rows<Op, 16>(input, output, rows, cols);
        return;
    }
    unsigned row = blockIdx.x * WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) return;
    size_t base = (size_t)row * cols;
    float mine = Op::identity();
    for (unsigned c = lane; c < cols; c += 32) mine = Op::combine(mine, input[base + c]);
    float total = warp_combine<Op>(mine);
    if (lane == 0) output[row] = total;
}

// a + b, at most the top of the unsigned range (Rust's saturating_add).
__device__ __forceinline__ unsigned saturating_add(unsigned a, unsigned b) { return a > ~b ? ~0u : a + b; }

// One thread's share of row input[lo, hi) for piece `piece` of `splits`: the row's float4s dealt
// out a block's worth at a time (piece p takes runs p, p + splits, ...), the elements before the
// first 16-byte boundary and after the last one at a time, four loads in flight, a lane each
// (kernels::rows::split::piece_walk).
template <typename Op>
__device__ __forceinline__ float piece_walk(const float* input, unsigned lo, unsigned hi, unsigned piece,
                                            unsigned splits) {
    const unsigned LOADS_IN_FLIGHT = 4;
    unsigned t = piece * THREADS + threadIdx.x, stride = splits * THREADS;
    float lanes[4] = {Op::identity(), Op::identity(), Op::identity(), Op::identity()};
    unsigned first = hi, last = hi;
    if (((unsigned long long)input & 15) == 0) {
        unsigned up = lo > 0xfffffffcu ? 0xffffffffu : (lo + 3u) & ~3u;
        first = up < hi ? up : hi;
        last = (hi & ~3u) > first ? (hi & ~3u) : first;
    }
    for (unsigned i = saturating_add(lo, t); i < first; i = saturating_add(i, stride))
        lanes[0] = Op::combine(lanes[0], input[i]);
    unsigned quads = (last - first) / 4, q = t;
    const float4* vectors = (const float4*)(input + first);
    for (; saturating_add(q, (LOADS_IN_FLIGHT - 1) * stride) < quads; q += LOADS_IN_FLIGHT * stride) {
        float4 loaded[LOADS_IN_FLIGHT];
#pragma unroll
        for (unsigned k = 0; k < LOADS_IN_FLIGHT; ++k) loaded[k] = vectors[q + k * stride];
#pragma unroll
        for (unsigned k = 0; k < LOADS_IN_FLIGHT; ++k) {
            lanes[0] = Op::combine(lanes[0], loaded[k].x);
            lanes[1] = Op::combine(lanes[1], loaded[k].y);
            lanes[2] = Op::combine(lanes[2], loaded[k].z);
            lanes[3] = Op::combine(lanes[3], loaded[k].w);
        }
    }
    for (; q < quads; q = saturating_add(q, stride)) {
        float4 value = vectors[q];
        lanes[0] = Op::combine(lanes[0], value.x);
        lanes[1] = Op::combine(lanes[1], value.y);
        lanes[2] = Op::combine(lanes[2], value.z);
        lanes[3] = Op::combine(lanes[3], value.w);
    }
    for (unsigned i = saturating_add(last, t); i < hi; i = saturating_add(i, stride))
        lanes[0] = Op::combine(lanes[0], input[i]);
    return Op::combine(Op::combine(lanes[0], lanes[1]), Op::combine(lanes[2], lanes[3]));
}

// value combined over the block, valid in thread 0 (kernels::reduce::block_combine).
template <typename Op>
__device__ __forceinline__ float block_combine(float* sums, float value) {
    unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    value = warp_combine<Op>(value);
    if (lane == 0) sums[warp] = value;
    __syncthreads();
    float total = Op::identity();
    if (warp == 0) total = warp_combine<Op>(lane < WARPS ? sums[lane] : Op::identity());
    return total;
}

// A block per piece of a row, rows × splits blocks; the row's last block (by ticket) combines the
// pieces in piece order and resets the ticket (kernels::rows::split).
template <typename Op>
__device__ __forceinline__ void row_split(const float* input, float* output, float* partials, unsigned* tickets,
                                          unsigned rows, unsigned cols) {
    extern __shared__ float sums[];
    unsigned* last = (unsigned*)(sums + WARPS);
    unsigned t = threadIdx.x, splits = gridDim.x / rows;
    unsigned row = blockIdx.x / splits, piece = blockIdx.x % splits;
    unsigned base = row * cols;
    float result = block_combine<Op>(sums, piece_walk<Op>(input, base, base + cols, piece, splits));
    if (splits == 1) {
        if (t == 0) output[row] = result;
        return;
    }
    if (t == 0) {
        partials[blockIdx.x] = result;
        __threadfence();
        unsigned taken = atomicAdd(tickets + row, 1u);
        *last = taken == splits - 1;
    }
    __syncthreads();
    if (*last) {
        __threadfence();
        float all = Op::identity();
        for (unsigned p = t; p < splits; p += THREADS)
            all = Op::combine(all, __int_as_float(__ldcg((const int*)partials + row * splits + p)));
        float total = block_combine<Op>(sums, all);
        if (t == 0) {
            output[row] = total;
            *(volatile unsigned*)(tickets + row) = 0;
        }
    }
}
