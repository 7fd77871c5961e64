// Pieces shared by the scan twins (kernels::scan): 256 threads; phase 0 scans tiles (or resets
// the look-back's statuses), phase 1 adds the tiles' prefixes (or runs the look-back scan).
// Templates over the element, float or int, as kernels::scan::ScanElement.
#pragma once

#define THREADS 256u
#define WARPS (THREADS / 32u)
#define RUNS 8u
#define PER_THREAD (4u * RUNS)
#define SCAN_TILE (PER_THREAD * THREADS)

// The scan's addition (ScanElement::plus): float rounds; int wraps (through unsigned, where C++
// defines wrapping), as add.s32 and Rust's wrapping_add.
__device__ __forceinline__ float plus(float a, float b) { return a + b; }
__device__ __forceinline__ int plus(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
__device__ __forceinline__ unsigned to_bits(float v) { return __float_as_uint(v); }
__device__ __forceinline__ unsigned to_bits(int v) { return (unsigned)v; }
template <typename T> __device__ __forceinline__ T from_bits(unsigned u);
template <> __device__ __forceinline__ float from_bits<float>(unsigned u) { return __uint_as_float(u); }
template <> __device__ __forceinline__ int from_bits<int>(unsigned u) { return (int)u; }

// The warp's inclusive scan by shuffles up (kernels::scan::warp_inclusive).
template <typename T>
__device__ __forceinline__ T warp_inclusive(T value) {
    unsigned lane = threadIdx.x % 32;
    for (unsigned d = 1; d < 32; d *= 2) {
        T below = __shfl_up_sync(0xffffffffu, value, d);
        if (lane >= d) value = plus(value, below);
    }
    return value;
}

// The warp's sum in every lane, a butterfly (kernels::scan::warp_total).
template <typename T>
__device__ __forceinline__ T warp_total(T value) {
    for (unsigned mask = 16; mask > 0; mask /= 2) value = plus(value, __shfl_xor_sync(0xffffffffu, value, mask));
    return value;
}

// Each run's exclusive prefix over the block, and the block's total (kernels::scan::block_exclusive):
// warp by warp, run 0 of every lane before run 1; sums holds WARPS + 1 elements.
template <typename T>
__device__ __forceinline__ void block_exclusive(T* sums, const T totals[RUNS], T prefixes[RUNS], T* block_total) {
    unsigned t = threadIdx.x, lane = t % 32, warp = t / 32;
    T warp_sum = T(0);
#pragma unroll
    for (unsigned c = 0; c < RUNS; ++c) {
        T inclusive = warp_inclusive(totals[c]);
        T below = __shfl_up_sync(0xffffffffu, inclusive, 1);
        T before = lane == 0 ? T(0) : below;
        T all = __shfl_sync(0xffffffffu, inclusive, 31);
        if (c == 0) {
            prefixes[0] = before;
            warp_sum = all;
        } else {
            prefixes[c] = plus(warp_sum, before);
            warp_sum = plus(warp_sum, all);
        }
    }
    if (lane == 31) sums[warp] = warp_sum;
    __syncthreads();
    if (warp == 0) {
        T mine = lane < WARPS ? sums[lane] : T(0);
        T scanned = warp_inclusive(mine);
        T below_w = __shfl_up_sync(0xffffffffu, scanned, 1);
        if (lane < WARPS) {
            sums[lane] = lane == 0 ? T(0) : below_w;
            if (lane == WARPS - 1) sums[WARPS] = scanned;
        }
    }
    __syncthreads();
    *block_total = sums[WARPS];
    T warp_prefix = sums[warp];
#pragma unroll
    for (unsigned c = 0; c < RUNS; ++c) prefixes[c] = plus(warp_prefix, prefixes[c]);
}

// Where the thread's run c of a tile starts: runs of 4 striped across the warp
// (kernels::scan::warp_shuffle::run_start); saturates past 2^32 - 1.
__device__ __forceinline__ unsigned run_start(unsigned tile, unsigned c) {
    unsigned in_tile = (threadIdx.x / 32) * (32 * PER_THREAD) + c * 128 + 4 * (threadIdx.x % 32);
    unsigned base = tile * SCAN_TILE;
    return base + in_tile < base ? 0xffffffffu : base + in_tile;
}

__device__ __forceinline__ unsigned saturating_add(unsigned a, unsigned b) { return a + b < a ? 0xffffffffu : a + b; }

// The thread's runs of a tile, 0 past n (kernels::scan::warp_shuffle::load_run); 16-byte loads move
// the elements' bits.
template <typename T>
__device__ __forceinline__ void load_run(const T* input, unsigned tile, unsigned n, T run[PER_THREAD]) {
    bool vector = ((unsigned long long)input & 15) == 0;
#pragma unroll
    for (unsigned c = 0; c < RUNS; ++c) {
        unsigned first = run_start(tile, c);
        if (vector && first + 4 >= first && first + 4 <= n) {
            uint4 a = *(const uint4*)(input + first);
            run[4 * c] = from_bits<T>(a.x);
            run[4 * c + 1] = from_bits<T>(a.y);
            run[4 * c + 2] = from_bits<T>(a.z);
            run[4 * c + 3] = from_bits<T>(a.w);
        } else {
#pragma unroll
            for (unsigned k = 0; k < 4; ++k) {
                unsigned i = saturating_add(first, k);
                run[4 * c + k] = i < n ? input[i] : T(0);
            }
        }
    }
}

// Writes the thread's runs laid out as load_run reads them (kernels::scan::warp_shuffle::write_runs).
template <typename T>
__device__ __forceinline__ void write_runs(T* output, unsigned tile, unsigned n, const T values[PER_THREAD]) {
    bool vector = ((unsigned long long)output & 15) == 0;
#pragma unroll
    for (unsigned c = 0; c < RUNS; ++c) {
        unsigned first = run_start(tile, c);
        if (vector && first + 4 >= first && first + 4 <= n) {
            *(uint4*)(output + first) = make_uint4(to_bits(values[4 * c]), to_bits(values[4 * c + 1]),
                                                   to_bits(values[4 * c + 2]), to_bits(values[4 * c + 3]));
        } else {
#pragma unroll
            for (unsigned k = 0; k < 4; ++k) {
                unsigned i = saturating_add(first, k);
                if (i < n) output[i] = values[4 * c + k];
            }
        }
    }
}

template <typename T>
__device__ __forceinline__ void run_totals(const T run[PER_THREAD], T totals[RUNS]) {
#pragma unroll
    for (unsigned c = 0; c < RUNS; ++c) {
        T total = T(0);
#pragma unroll
        for (unsigned k = 0; k < 4; ++k) total = plus(total, run[4 * c + k]);
        totals[c] = total;
    }
}

// Each run scanned on top of its prefix, inclusive or exclusive (kernels::scan::warp_shuffle::store_run).
template <typename T>
__device__ __forceinline__ void store_run(T* output, unsigned tile, unsigned n, const T run[PER_THREAD],
                                          const T prefixes[RUNS], bool exclusive) {
    T scanned[PER_THREAD];
#pragma unroll
    for (unsigned c = 0; c < RUNS; ++c) {
        T sum = prefixes[c];
#pragma unroll
        for (unsigned k = 0; k < 4; ++k) {
            T before = sum;
            sum = plus(sum, run[4 * c + k]);
            scanned[4 * c + k] = exclusive ? before : sum;
        }
    }
    write_runs(output, tile, n, scanned);
}

// kernels::scan::warp_shuffle::warp_shuffle_body: phase 0 scans each tile and writes its total to
// scratch[tile]; phase 1 adds scratch[tile] to the tile.
template <typename T>
__device__ __forceinline__ void warp_shuffle_body(const T* input, T* output, T* scratch, unsigned n, unsigned exclusive,
                                                  unsigned phase) {
    unsigned tile = blockIdx.x;
    T run[PER_THREAD];
    if (phase == 1) {
        T prefix = scratch[tile];
        load_run(output, tile, n, run);
#pragma unroll
        for (unsigned k = 0; k < PER_THREAD; ++k) run[k] = plus(run[k], prefix);
        write_runs(output, tile, n, run);
        return;
    }
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    T* sums = (T*)shared_bytes;
    load_run(input, tile, n, run);
    T totals[RUNS], prefixes[RUNS], tile_total;
    run_totals(run, totals);
    block_exclusive(sums, totals, prefixes, &tile_total);
    store_run(output, tile, n, run, prefixes, exclusive != 0);
    if (threadIdx.x == 0) scratch[tile] = tile_total;
}
