// kernels::scan::warp_shuffle: 4096 elements per tile, 16 per thread in four runs striped across the warp, warp shuffles, warp totals in shared.
#include "scan.cuh"
extern "C" __global__ void scan_warp_shuffle_cuda(const float* input, float* output, float* scratch, unsigned n,
                                                  unsigned exclusive, unsigned phase) {
    unsigned tile = blockIdx.x;
    float run[PER_THREAD];
    if (phase == 1) {
        float prefix = scratch[tile];
        load_run(output, tile, n, run);
#pragma unroll
        for (unsigned k = 0; k < PER_THREAD; ++k) run[k] = run[k] + prefix;
        write_runs(output, tile, n, run);
        return;
    }
    extern __shared__ float sums[];
    load_run(input, tile, n, run);
    float totals[RUNS], prefixes[RUNS], tile_total;
    run_totals(run, totals);
    block_exclusive(sums, totals, prefixes, &tile_total);
    store_run(output, tile, n, run, prefixes, exclusive != 0);
    if (threadIdx.x == 0) scratch[tile] = tile_total;
}
