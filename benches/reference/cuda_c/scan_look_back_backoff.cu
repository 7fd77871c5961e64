// kernels::scan::backoff: the warp look-back by ticket, pausing about 200 ns (__nanosleep) between
// reads of a window of statuses not yet all published.
#include "look_back.cuh"
extern "C" __global__ void __launch_bounds__(THREADS, LOOK_BACK_BLOCKS_PER_SM)
    scan_look_back_backoff_cuda(const float* input, size_t input_len, float* output, size_t output_len, float* scratch,
                                size_t scratch_len, unsigned n, unsigned exclusive, unsigned phase) {
    look_back_body<float, WarpWalk<200>>(input, output, scratch, n, exclusive, phase);
}
