// kernels::scan::warp_shuffle: 2048 elements per tile, 8 per thread, warp shuffles, warp totals in shared.
#include "scan.cuh"
extern "C" __global__ void scan_warp_shuffle_cuda(const float* input, float* output, float* scratch, unsigned n,
                                                  unsigned exclusive, unsigned phase) {
    unsigned tile = blockIdx.x;
    float run[PER_THREAD];
    if (phase == 1) {
        float prefix = scratch[tile];
        load_run(output, tile, n, run);
        unsigned first = tile * TILE_2048 + threadIdx.x * PER_THREAD;
#pragma unroll
        for (unsigned k = 0; k < PER_THREAD; ++k) {
            unsigned i = first + k < first ? 0xffffffffu : first + k;
            if (i < n) output[i] = prefix + run[k];
        }
        return;
    }
    extern __shared__ float sums[];
    load_run(input, tile, n, run);
    float tile_total;
    float prefix = block_exclusive(sums, run_total(run), &tile_total);
    store_run(output, tile, n, run, prefix, exclusive != 0);
    if (threadIdx.x == 0) scratch[tile] = tile_total;
}
