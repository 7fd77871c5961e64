// Rolling rows (kernels::conv2d::rolling): each warp walks down a band of output rows (the height
// split over the grid's y) and 128 columns; input rows travel into the warp's ring in shared memory with cp.async (zeros outside
// the image through the copies' source size), the 2R+1 open output rows stay in registers.
#include "conv2d.cuh"

#define ROLL_LANES 32u
#define ROLL_WARPS 4u
#define ROLL_V 4u
#define ROLL_SPAN (ROLL_LANES * ROLL_V)
#define ROLL_DEPTH 6u
#define ROLL_HALO 4u
#define ROLL_PITCH (ROLL_SPAN + 2 * ROLL_HALO)
#define ROLL_REGISTER_RADIUS 2u
#define ROLL_MAX_SIDE (2 * MAX_RADIUS + 1)
#define ROLL_FILTER_PITCH 8u

struct RollWalk {
    float* rows;  // the warp's ring: ROLL_DEPTH rows of ROLL_PITCH
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
template <bool VECTOR, unsigned R>
__device__ __forceinline__ void roll_load(const RollWalk& w, unsigned j) {
    unsigned row = w.first + j - R;
    float* slot = w.rows + (j % ROLL_DEPTH) * ROLL_PITCH;
    bool inside = row < w.height;
    const float* start = inside ? w.image + (size_t)row * w.width : w.image;
    if (VECTOR) {
        bool in = inside && w.col < w.width;
        roll_copy16(slot + ROLL_HALO + ROLL_V * w.lane, in ? start + w.col : w.image, in ? 4 : 0);
        // Lane 0 copies the halo left of the warp's columns, lane 1 the halo right of them.
        if (w.lane < 2) {
            unsigned halo_col = w.lane == 0 ? w.base - ROLL_HALO : w.base + ROLL_SPAN;
            unsigned halo_at = w.lane == 0 ? 0 : ROLL_HALO + ROLL_SPAN;
            bool hin = inside && halo_col < w.width;
            roll_copy16(slot + halo_at, hin ? start + halo_col : w.image, hin ? 4 : 0);
        }
    } else {
        // One float per copy, consecutive lanes on consecutive columns: ring column c holds image
        // column base - HALO + c.
#pragma unroll
        for (unsigned q = 0; q < ROLL_V; q++) {
            unsigned at = ROLL_HALO + w.lane + ROLL_LANES * q;
            unsigned col = w.base + at - ROLL_HALO;
            bool in = inside && col < w.width;
            roll_copy4(slot + at, in ? start + col : w.image, in);
        }
        // Lanes 0..4 copy the halo left of the warp's columns, lanes 4..8 the halo right.
        if (w.lane < 2 * ROLL_HALO) {
            unsigned at = w.lane < ROLL_HALO ? w.lane : ROLL_SPAN + w.lane;
            unsigned col = w.base + at - ROLL_HALO;
            bool in = inside && col < w.width;
            roll_copy4(slot + at, in ? start + col : w.image, in);
        }
    }
}

template <bool VECTOR>
__device__ __forceinline__ void roll_store(const RollWalk& w, unsigned o, const float (&sums)[ROLL_V]) {
    float* start = w.output + (size_t)o * w.width;
    if (VECTOR) {
        if (w.col < w.width) *reinterpret_cast<float4*>(start + w.col) = make_float4(sums[0], sums[1], sums[2], sums[3]);
    } else {
#pragma unroll
        for (unsigned q = 0; q < ROLL_V; q++)
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

template <bool VECTOR, unsigned R>
__device__ __forceinline__ void roll_band(const RollWalk& walk, const float* filter) {
    const unsigned side = 2 * R + 1;
    unsigned rows_in = walk.last - walk.first + 2 * R;
    float held[ROLL_MAX_SIDE][ROLL_MAX_SIDE];
    if (R <= ROLL_REGISTER_RADIUS) roll_read_filter<R>(filter, held);
#pragma unroll
    for (unsigned j = 0; j < ROLL_DEPTH - 1; j++) {
        if (j < rows_in) roll_load<VECTOR, R>(walk, j);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    float sums[ROLL_MAX_SIDE][ROLL_V] = {};
    for (unsigned j0 = 0; j0 < rows_in; j0 += side) {
#pragma unroll
        for (unsigned k = 0; k < side; k++) {
            unsigned j = j0 + k;
            if (j >= rows_in) break;
            asm volatile("cp.async.wait_group %0;" ::"n"(ROLL_DEPTH - 2) : "memory");
            __syncwarp();
            const float* slot = walk.rows + (j % ROLL_DEPTH) * ROLL_PITCH + ROLL_V * walk.lane;
            float4 l = *reinterpret_cast<const float4*>(slot);
            float4 m = *reinterpret_cast<const float4*>(slot + 4);
            float4 r = *reinterpret_cast<const float4*>(slot + 8);
            float x[12] = {l.x, l.y, l.z, l.w, m.x, m.y, m.z, m.w, r.x, r.y, r.z, r.w};
            if (j + ROLL_DEPTH - 1 < rows_in) roll_load<VECTOR, R>(walk, j + ROLL_DEPTH - 1);
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
                for (unsigned c = 0; c < ROLL_V; c++) {
#pragma unroll
                    for (unsigned dx = 0; dx < side; dx++) {
                        float weight = w[dx];
                        float value = x[ROLL_HALO - R + c + dx];
                        sums[open][c] = dy == 0 && dx == 0 ? weight * value : fmaf(weight, value, sums[open][c]);
                    }
                }
            }
            unsigned o = walk.first + j - 2 * R;
            if (j >= 2 * R && o < walk.last) roll_store<VECTOR>(walk, o, sums[(k + 1) % side]);
        }
    }
}

extern "C" __global__ void __launch_bounds__(128, 6) conv2d_rolling_cuda(const float* image, const float* filter, float* output,
                                                      unsigned height, unsigned width, unsigned radius) {
    extern __shared__ __align__(16) float shared[];
    float* rings = shared;
    float* weights = shared + ROLL_WARPS * ROLL_DEPTH * ROLL_PITCH;
    unsigned side = 2 * radius + 1;
    unsigned t = threadIdx.x;
    if (t < ROLL_MAX_SIDE * ROLL_FILTER_PITCH) {
        unsigned i = t / ROLL_FILTER_PITCH, j = t % ROLL_FILTER_PITCH;
        weights[t] = i < side && j < side ? filter[i * side + j] : 0.0f;
    }
    __syncthreads();
    unsigned warp = t / ROLL_LANES;
    unsigned base = (blockIdx.x * ROLL_WARPS + warp) * ROLL_SPAN;
    if (base >= width) return;
    RollWalk walk;
    walk.rows = rings + warp * ROLL_DEPTH * ROLL_PITCH;
    walk.image = image;
    walk.output = output;
    walk.height = height;
    walk.width = width;
    walk.base = base;
    walk.lane = t % ROLL_LANES;
    walk.col = base + ROLL_V * walk.lane;
    // The band's rows: height split evenly over the grid's rows of blocks.
    unsigned band = (height + gridDim.y - 1) / gridDim.y;
    walk.first = blockIdx.y * band;
    if (walk.first >= height) return;
    walk.last = min(height, walk.first + band);
    bool vector = width % 4 == 0 && ((size_t)image % 16) == 0 && ((size_t)output % 16) == 0;
    if (vector) {
        WITH_RADIUS(radius, (roll_band<true, R>(walk, weights)))
    } else {
        WITH_RADIUS(radius, (roll_band<false, R>(walk, weights)))
    }
}
