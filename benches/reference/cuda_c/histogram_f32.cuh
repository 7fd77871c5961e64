// Pieces shared by the f32 histogram twins (kernels::histogram_f32): 256 threads, 256 bins over
// [lo, hi), a grid-stride walk by at most the resident blocks; counts added to bins (zero first).
#pragma once
#include "histogram.cuh"

// kernels::histogram_f32::scale and bin: -1 outside [lo, hi) (NaN too).
__device__ __forceinline__ float bin_scale(float lo, float hi) { return (float)BINS / (hi - lo); }

__device__ __forceinline__ int bin_of(float x, float lo, float hi, float scale) {
    if (!(x >= lo && x < hi)) return -1;
    // Clamped in float first, as the Rust kernel does (its conversion then needs no saturation).
    return (int)(unsigned)fminf(fmaxf((x - lo) * scale, 0.0f), (float)(BINS - 1));
}
