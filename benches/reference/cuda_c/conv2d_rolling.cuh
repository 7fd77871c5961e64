// Rolling rows (kernels::conv2d::rolling): each warp walks down a band of output rows (the height
// split over the grid's y) and 32V columns (V = 4 or 8 outputs per lane); input rows travel into the warp's ring in shared memory with cp.async (zeros outside
// the image through the copies' source size), the 2R+1 open output rows stay in registers.
#pragma once
#include "conv2d.cuh"

#define ROLL_LANES 32u
#define ROLL_WARPS 4u
#define ROLL_MAX_V 8u
#define ROLL_HALO 4u
#define ROLL_REGISTER_RADIUS 2u
#define ROLL_MAX_SIDE (2 * MAX_RADIUS + 1)
#define ROLL_FILTER_PITCH 8u

template <unsigned V>
struct RollWalk {
    static const unsigned SPAN = ROLL_LANES * V;
    static const unsigned PITCH = SPAN + 2 * ROLL_HALO;
    // Ring rows: 8 at V = 4 (the slot a mask), 6 at V = 8 (as kernels::conv2d::rolling::depth).
    static const unsigned DEPTH = V == 4 ? 8 : 6;
    float* rows;  // the warp's ring: DEPTH rows of PITCH
    const float* image;
    float* output;
    unsigned height, width, base, col, lane, first, last;
};

__device__ __forceinline__ void roll_copy16(float* dst, const float* src, unsigned valid) {
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(src), "r"(4 * valid) : "memory");
}

__device__ __forceinline__ void roll_copy4(float* dst, const float* src, unsigned valid) {
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(s), "l"(src), "r"(4 * valid) : "memory");
}

// Input row first - R + j (zeros outside the image) into ring slot j mod DEPTH.
template <bool VECTOR, unsigned R, unsigned V>
__device__ __forceinline__ void roll_load(const RollWalk<V>& w, unsigned j) {
    unsigned row = w.first + j - R;
    float* slot = w.rows + (j % RollWalk<V>::DEPTH) * RollWalk<V>::PITCH;
    bool inside = row < w.height;
    const float* start = inside ? w.image + (size_t)row * w.width : w.image;
    if (VECTOR) {
#pragma unroll
        for (unsigned i = 0; i < V / 4; i++) {
            bool in = inside && w.col + 4 * i < w.width;
            roll_copy16(slot + ROLL_HALO + V * w.lane + 4 * i, in ? start + w.col + 4 * i : w.image, in ? 4 : 0);
        }
        // Lane 0 copies the halo left of the warp's columns, lane 1 the halo right of them.
        if (w.lane < 2) {
            unsigned halo_col = w.lane == 0 ? w.base - ROLL_HALO : w.base + RollWalk<V>::SPAN;
            unsigned halo_at = w.lane == 0 ? 0 : ROLL_HALO + RollWalk<V>::SPAN;
            bool hin = inside && halo_col < w.width;
            roll_copy16(slot + halo_at, hin ? start + halo_col : w.image, hin ? 4 : 0);
        }
    } else {
        // One float per copy, consecutive lanes on consecutive columns: ring column c holds image
        // column base - HALO + c.
#pragma unroll
        for (unsigned q = 0; q < V; q++) {
            unsigned at = ROLL_HALO + w.lane + ROLL_LANES * q;
            unsigned col = w.base + at - ROLL_HALO;
            bool in = inside && col < w.width;
            roll_copy4(slot + at, in ? start + col : w.image, in);
        }
        // Lanes 0..4 copy the halo left of the warp's columns, lanes 4..8 the halo right.
        if (w.lane < 2 * ROLL_HALO) {
            unsigned at = w.lane < ROLL_HALO ? w.lane : RollWalk<V>::SPAN + w.lane;
            unsigned col = w.base + at - ROLL_HALO;
            bool in = inside && col < w.width;
            roll_copy4(slot + at, in ? start + col : w.image, in);
        }
    }
}

template <bool VECTOR, unsigned V>
__device__ __forceinline__ void roll_store(const RollWalk<V>& w, unsigned o, const float (&sums)[ROLL_MAX_V]) {
    float* start = w.output + (size_t)o * w.width;
    if (VECTOR) {
#pragma unroll
        for (unsigned i = 0; i < V / 4; i++)
            if (w.col + 4 * i < w.width)
                *reinterpret_cast<float4*>(start + w.col + 4 * i) =
                    make_float4(sums[4 * i], sums[4 * i + 1], sums[4 * i + 2], sums[4 * i + 3]);
    } else {
#pragma unroll
        for (unsigned q = 0; q < V; q++)
            if (w.col + q < w.width) start[w.col + q] = sums[q];
    }
}

template <unsigned R>
__device__ __forceinline__ void roll_read_filter(const float* filter, float (&w)[ROLL_MAX_SIDE][ROLL_MAX_SIDE]) {
#pragma unroll
    for (unsigned i = 0; i < 2 * R + 1; i++)
#pragma unroll
        for (unsigned j = 0; j < 2 * R + 1; j++) w[i][j] = filter[i * ROLL_FILTER_PITCH + j];
}

template <bool VECTOR, unsigned V, unsigned R>
__device__ __forceinline__ void roll_band(const RollWalk<V>& walk, const float* filter) {
    const unsigned side = 2 * R + 1;
    unsigned rows_in = walk.last - walk.first + 2 * R;
    float held[ROLL_MAX_SIDE][ROLL_MAX_SIDE];
    if (R <= ROLL_REGISTER_RADIUS) roll_read_filter<R>(filter, held);
#pragma unroll
    for (unsigned j = 0; j < RollWalk<V>::DEPTH - 1; j++) {
        if (j < rows_in) roll_load<VECTOR, R, V>(walk, j);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    float sums[ROLL_MAX_SIDE][ROLL_MAX_V] = {};
    for (unsigned j0 = 0; j0 < rows_in; j0 += side) {
#pragma unroll
        for (unsigned k = 0; k < side; k++) {
            unsigned j = j0 + k;
            if (j >= rows_in) break;
            asm volatile("cp.async.wait_group %0;" ::"n"(RollWalk<V>::DEPTH - 2) : "memory");
            __syncwarp();
            const float* slot = walk.rows + (j % RollWalk<V>::DEPTH) * RollWalk<V>::PITCH + V * walk.lane;
            float x[ROLL_MAX_V + 2 * ROLL_HALO];
#pragma unroll
            for (unsigned i = 0; i < V / 4 + 2; i++) {
                float4 f = *reinterpret_cast<const float4*>(slot + 4 * i);
                x[4 * i] = f.x;
                x[4 * i + 1] = f.y;
                x[4 * i + 2] = f.z;
                x[4 * i + 3] = f.w;
            }
            if (j + RollWalk<V>::DEPTH - 1 < rows_in) roll_load<VECTOR, R, V>(walk, j + RollWalk<V>::DEPTH - 1);
            asm volatile("cp.async.commit_group;" ::: "memory");
#pragma unroll
            for (unsigned dy = 0; dy < side; dy++) {
                unsigned open = (k + side - dy) % side;
                // Filter row dy: held, or two 16-byte reads at 7x7.
                float w[ROLL_MAX_SIDE];
                if (R <= ROLL_REGISTER_RADIUS) {
#pragma unroll
                    for (unsigned dx = 0; dx < side; dx++) w[dx] = held[dy][dx];
                } else {
                    float4 lo = *reinterpret_cast<const float4*>(filter + dy * ROLL_FILTER_PITCH);
                    float4 hi = *reinterpret_cast<const float4*>(filter + dy * ROLL_FILTER_PITCH + 4);
                    float row[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
                    for (unsigned dx = 0; dx < side; dx++) w[dx] = row[dx];
                }
#pragma unroll
                for (unsigned c = 0; c < V; c++) {
#pragma unroll
                    for (unsigned dx = 0; dx < side; dx++) {
                        float weight = w[dx];
                        float value = x[ROLL_HALO - R + c + dx];
                        sums[open][c] = dy == 0 && dx == 0 ? weight * value : fmaf(weight, value, sums[open][c]);
                    }
                }
            }
            unsigned o = walk.first + j - 2 * R;
            if (j >= 2 * R && o < walk.last) roll_store<VECTOR, V>(walk, o, sums[(k + 1) % side]);
        }
    }
}

template <unsigned V>
__device__ __forceinline__ void rolling(const float* image, const float* filter, float* output, unsigned height,
                                        unsigned width, unsigned radius) {
    extern __shared__ __align__(16) float shared[];
    float* rings = shared;
    float* weights = shared + ROLL_WARPS * RollWalk<V>::DEPTH * RollWalk<V>::PITCH;
    unsigned side = 2 * radius + 1;
    unsigned t = threadIdx.x;
    if (t < ROLL_MAX_SIDE * ROLL_FILTER_PITCH) {
        unsigned i = t / ROLL_FILTER_PITCH, j = t % ROLL_FILTER_PITCH;
        weights[t] = i < side && j < side ? filter[i * side + j] : 0.0f;
    }
    __syncthreads();
    unsigned warp = t / ROLL_LANES;
    unsigned base = (blockIdx.x * ROLL_WARPS + warp) * RollWalk<V>::SPAN;
    if (base >= width) return;
    RollWalk<V> walk;
    walk.rows = rings + warp * RollWalk<V>::DEPTH * RollWalk<V>::PITCH;
    walk.image = image;
    walk.output = output;
    walk.height = height;
    walk.width = width;
    walk.base = base;
    walk.lane = t % ROLL_LANES;
    walk.col = base + V * walk.lane;
    // The band's rows: height split evenly over the grid's rows of blocks.
    unsigned band = (height + gridDim.y - 1) / gridDim.y;
    walk.first = blockIdx.y * band;
    if (walk.first >= height) return;
    walk.last = min(height, walk.first + band);
    bool vector = width % 4 == 0 && ((size_t)image % 16) == 0 && ((size_t)output % 16) == 0;
    if (vector) {
        WITH_RADIUS(radius, (roll_band<true, V, R>(walk, weights)))
    } else {
        WITH_RADIUS(radius, (roll_band<false, V, R>(walk, weights)))
    }
}
