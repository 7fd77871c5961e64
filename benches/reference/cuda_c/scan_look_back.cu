// kernels::scan::look_back: single pass; tiles by ticket, 8-byte statuses (flag high, value low),
// thread 0 walks back over the tiles before its own.
#include "scan.cuh"
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
extern "C" __global__ void scan_look_back_cuda(const float* input, float* output, float* scratch, unsigned n,
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
    if (t == 0) {
        float before = 0.0f;
        if (tile == 0) {
            publish(statuses, status(INCLUSIVE, aggregate));
        } else {
            publish(statuses + tile, status(AGGREGATE, aggregate));
            for (unsigned j = tile - 1;; --j) {
                unsigned long long word;
                do word = peek(statuses + j); while ((word >> 32) == 0);
                before = __uint_as_float((unsigned)word) + before;
                if ((word >> 32) == INCLUSIVE) break;
            }
            publish(statuses + tile, status(INCLUSIVE, before + aggregate));
        }
        *prefix = before;
    }
    __syncthreads();
    store_run(output, tile, n, run, *prefix + in_tile, exclusive != 0);
}
