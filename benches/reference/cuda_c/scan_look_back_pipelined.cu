// kernels::scan::pipelined: the warp look-back in resident blocks, each copying its next tile while
// it scans the current one.
#include "scan_pipelined.cuh"
extern "C" __global__ void __launch_bounds__(THREADS, PIPELINED_BLOCKS_PER_SM)
    scan_look_back_pipelined_cuda(const float* input, size_t input_len, float* output, size_t output_len,
                                  float* scratch, size_t scratch_len, unsigned n, unsigned exclusive, unsigned phase) {
    pipelined_body<float>(input, output, scratch, n, exclusive, phase);
}
