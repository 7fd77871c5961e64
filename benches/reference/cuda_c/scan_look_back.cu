// kernels::scan::look_back: the single pass, thread 0 walking back one tile at a time.
#include "look_back.cuh"
extern "C" __global__ void __launch_bounds__(THREADS, LOOK_BACK_BLOCKS_PER_SM)
    scan_look_back_cuda(const float* input, size_t input_len, float* output, size_t output_len, float* scratch,
                        size_t scratch_len, unsigned n, unsigned exclusive, unsigned phase) {
    look_back_body<float, OneThread>(input, output, scratch, n, exclusive, phase);
}
