// kernels::scan::warp_shuffle: 8192 elements per tile, 32 per thread in eight runs striped across the warp, warp shuffles, warp totals in shared.
#include "scan.cuh"
extern "C" __global__ void scan_warp_shuffle_cuda(const float* input, size_t input_len, float* output,
                                                  size_t output_len, float* scratch, size_t scratch_len, unsigned n,
                                                  unsigned exclusive, unsigned phase) {
    warp_shuffle_body<float>(input, output, scratch, n, exclusive, phase);
}
