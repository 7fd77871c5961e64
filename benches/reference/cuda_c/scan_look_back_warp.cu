// kernels::scan::look_back_warp: the single pass, warp 0 walking back 32 tiles at a time.
#include "look_back.cuh"
// The warp's sum in every lane, a butterfly (kernels::reduce::warp_sum).
__device__ __forceinline__ float warp_sum(float v) {
    for (unsigned mask = 16; mask > 0; mask /= 2) v += __shfl_xor_sync(0xffffffffu, v, mask);
    return v;
}
struct WholeWarp {
    static __device__ __forceinline__ float prefix(unsigned long long* statuses, unsigned tile, float aggregate,
                                                   unsigned lane) {
        if (tile == 0) {
            if (lane == 0) publish(statuses, status(INCLUSIVE, aggregate));
            return 0.0f;
        }
        if (lane == 0) publish(statuses + tile, status(AGGREGATE, aggregate));
        float before = 0.0f;
        for (unsigned end = tile;; end -= 32) {
            unsigned back = 32 - lane;
            unsigned long long word;
            do word = end >= back ? peek(statuses + (end - back)) : status(INCLUSIVE, 0.0f);
            while (!__all_sync(0xffffffffu, (word >> 32) != 0));
            float value = __uint_as_float((unsigned)word);
            unsigned inclusive = __ballot_sync(0xffffffffu, (word >> 32) == INCLUSIVE);
            if (inclusive != 0) {
                unsigned nearest = 31 - __clz(inclusive);
                before += warp_sum(lane >= nearest ? value : 0.0f);
                break;
            }
            before += warp_sum(value);
        }
        if (lane == 0) publish(statuses + tile, status(INCLUSIVE, before + aggregate));
        return before;
    }
};
extern "C" __global__ void scan_look_back_warp_cuda(const float* input, float* output, float* scratch, unsigned n,
                                                    unsigned exclusive, unsigned phase) {
    look_back_body<WholeWarp>(input, output, scratch, n, exclusive, phase);
}
