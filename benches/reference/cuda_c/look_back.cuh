// The single-pass scan of kernels::scan::look_back, with the walk over the tiles before a tile as
// a parameter (kernels::scan::look_back::Walk): tiles by ticket, 8-byte statuses (flag high,
// value bits low), phase 0 resets them. Both walks are here, templates over the element.
#pragma once
#include "scan.cuh"

#define AGGREGATE 1ull
#define INCLUSIVE 2ull
// kernels::scan::look_back::BLOCKS_PER_SM: the look-back kernels' bound, 64 registers.
#define LOOK_BACK_BLOCKS_PER_SM 4

template <typename T>
__device__ __forceinline__ unsigned long long status(unsigned long long flag, T value) {
    return flag << 32 | (unsigned long long)to_bits(value);
}
__device__ __forceinline__ void publish(unsigned long long* at, unsigned long long word) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(at), "l"(word) : "memory");
}
__device__ __forceinline__ unsigned long long peek(const unsigned long long* at) {
    unsigned long long word;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(word) : "l"(at) : "memory");
    return word;
}

// kernels::scan::look_back::OneThread: lane 0 walks back one tile at a time.
struct OneThread {
    template <typename T>
    static __device__ __forceinline__ T prefix(unsigned long long* statuses, unsigned tile, T aggregate, unsigned lane) {
        if (lane != 0) return T(0);
        if (tile == 0) {
            publish(statuses, status(INCLUSIVE, aggregate));
            return T(0);
        }
        publish(statuses + tile, status(AGGREGATE, aggregate));
        T before = T(0);
        for (unsigned j = tile - 1;; --j) {
            unsigned long long word;
            do word = peek(statuses + j); while ((word >> 32) == 0);
            before = plus(before, from_bits<T>((unsigned)word));
            if ((word >> 32) == INCLUSIVE) break;
        }
        publish(statuses + tile, status(INCLUSIVE, plus(before, aggregate)));
        return before;
    }
};

// kernels::scan::look_back_warp::WholeWarp: the warp reads 32 statuses per step and finds the
// nearest inclusive prefix with a ballot.
// The warp walk (kernels::scan::look_back_warp::WholeWarp), pausing about BACKOFF_NS between reads
// of a window not yet all published (none by default).
template <unsigned BACKOFF_NS = 0>
struct WarpWalk {
    template <typename T>
    static __device__ __forceinline__ T prefix(unsigned long long* statuses, unsigned tile, T aggregate, unsigned lane) {
        if (tile == 0) {
            if (lane == 0) publish(statuses, status(INCLUSIVE, aggregate));
            return T(0);
        }
        if (lane == 0) publish(statuses + tile, status(AGGREGATE, aggregate));
        T before = T(0);
        for (unsigned end = tile;; end -= 32) {
            unsigned back = 32 - lane;
            unsigned long long word;
            for (;;) {
                word = end >= back ? peek(statuses + (end - back)) : status(INCLUSIVE, T(0));
                if (__all_sync(0xffffffffu, (word >> 32) != 0)) break;
                if (BACKOFF_NS > 0) __nanosleep(BACKOFF_NS);
            }
            T value = from_bits<T>((unsigned)word);
            unsigned inclusive = __ballot_sync(0xffffffffu, (word >> 32) == INCLUSIVE);
            if (inclusive != 0) {
                unsigned nearest = 31 - __clz(inclusive);
                before = plus(before, warp_total(lane >= nearest ? value : T(0)));
                break;
            }
            before = plus(before, warp_total(value));
        }
        if (lane == 0) publish(statuses + tile, status(INCLUSIVE, plus(before, aggregate)));
        return before;
    }
};
using WholeWarp = WarpWalk<>;

// Walk::prefix(statuses, tile, aggregate, lane) is called by every lane of warp 0 and publishes the
// tile's statuses; lane 0's result is the sum of every element before the tile. With TICKETS a
// block's tile is the next ticket, else its own index (kernels::scan::ordered).
template <typename T, typename Walk, bool TICKETS = true>
__device__ __forceinline__ void look_back_body(const T* input, T* output, T* scratch, unsigned n, unsigned exclusive,
                                               unsigned phase) {
    unsigned tiles = (n + SCAN_TILE - 1) / SCAN_TILE;
    unsigned long long* statuses = (unsigned long long*)scratch;
    unsigned* ticket = (unsigned*)(statuses + tiles);
    unsigned t = threadIdx.x;
    if (phase == 0) {
        // A thread per status word, and one for the ticket (the grid of kernels::scan::look_back).
        unsigned i = blockIdx.x * THREADS + t;
        if (i < tiles) publish(statuses + i, 0);
        else if (i == tiles) *(volatile unsigned*)ticket = 0;
        return;
    }
    // The layout of kernels::scan::look_back::Scratch: sums, ticket, prefix.
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    T* sums = (T*)shared_bytes;
    unsigned* my_ticket = (unsigned*)(sums + WARPS + 1);
    T* prefix = (T*)(my_ticket + 1);
    unsigned tile = blockIdx.x;
    if (TICKETS) {
        if (t == 0) *my_ticket = atomicAdd(ticket, 1u);
        __syncthreads();
        tile = *my_ticket;
    }
    T run[PER_THREAD];
    load_run(input, tile, n, run);
    T totals[RUNS], in_tile[RUNS], aggregate;
    run_totals(run, totals);
    block_exclusive(sums, totals, in_tile, &aggregate);
    if (t < 32) {
        T before = Walk::prefix(statuses, tile, aggregate, t);
        if (t == 0) *prefix = before;
    }
    __syncthreads();
    T before = *prefix, prefixes[RUNS];
#pragma unroll
    for (unsigned c = 0; c < RUNS; ++c) prefixes[c] = plus(before, in_tile[c]);
    store_run(output, tile, n, run, prefixes, exclusive != 0);
}
