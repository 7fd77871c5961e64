// kernels::scan::staged: the ordered warp look-back with the tile staged in shared memory.
#include "scan_staged.cuh"
extern "C" __global__ void __launch_bounds__(THREADS, STAGED_BLOCKS_PER_SM)
    scan_look_back_staged_cuda(const float* input, size_t input_len, float* output, size_t output_len, float* scratch,
                               size_t scratch_len, unsigned n, unsigned exclusive, unsigned phase) {
    staged_body<float>(input, output, scratch, n, exclusive, phase);
}
