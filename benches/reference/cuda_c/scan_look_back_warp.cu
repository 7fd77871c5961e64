// kernels::scan::look_back_warp: single pass; tiles by ticket, 8-byte statuses (flag high, value
// low); warp 0 walks back 32 tiles at a time.
#include "scan.cuh"
// The warp's sum in every lane, a butterfly (kernels::reduce::warp_sum).
__device__ __forceinline__ float warp_sum(float v) {
    for (unsigned mask = 16; mask > 0; mask /= 2) v += __shfl_xor_sync(0xffffffffu, v, mask);
    return v;
}
#define AGGREGATE 1ull
#define INCLUSIVE 2ull
__device__ __forceinline__ unsigned long long status(unsigned long long flag, float value) {
    return flag << 32 | (unsigned long long)__float_as_uint(value);
}
__device__ __forceinline__ void publish(unsigned long long* at, unsigned long long word) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(at), "l"(word) : "memory");
}
__device__ __forceinline__ unsigned long long peek(const unsigned long long* at) {
    unsigned long long word;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(word) : "l"(at) : "memory");
    return word;
}
extern "C" __global__ void scan_look_back_warp_cuda(const float* input, float* output, float* scratch, unsigned n,
                                               unsigned exclusive, unsigned phase) {
    unsigned tiles = (n + TILE_2048 - 1) / TILE_2048;
    unsigned long long* statuses = (unsigned long long*)scratch;
    unsigned* ticket = (unsigned*)(statuses + tiles);
    unsigned t = threadIdx.x;
    if (phase == 0) {
        if (t == 0) {
            publish(statuses + blockIdx.x, 0);
            if (blockIdx.x == 0) *(volatile unsigned*)ticket = 0;
        }
        return;
    }
    extern __shared__ float sums[];
    unsigned* my_ticket = (unsigned*)(sums + WARPS + 1);
    float* prefix = (float*)(my_ticket + 1);
    if (t == 0) *my_ticket = atomicAdd(ticket, 1u);
    __syncthreads();
    unsigned tile = *my_ticket;
    float run[PER_THREAD];
    load_run(input, tile, n, run);
    float aggregate;
    float in_tile = block_exclusive(sums, run_total(run), &aggregate);
    if (t < 32) {
        unsigned lane = t;
        float before = 0.0f;
        if (tile == 0) {
            if (lane == 0) publish(statuses, status(INCLUSIVE, aggregate));
        } else {
            if (lane == 0) publish(statuses + tile, status(AGGREGATE, aggregate));
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
        }
        if (lane == 0) *prefix = before;
    }
    __syncthreads();
    store_run(output, tile, n, run, *prefix + in_tile, exclusive != 0);
}
