// kernels::scan::integer: the scans on int, exact (wrapping): three phases, both walks of
// the single pass, the pipelined one and the staged one.
#include "scan_pipelined.cuh"
#include "scan_staged.cuh"
extern "C" __global__ void scan_warp_shuffle_i32_cuda(const int* input, size_t input_len, int* output,
                                                      size_t output_len, int* scratch, size_t scratch_len, unsigned n,
                                                      unsigned exclusive, unsigned phase) {
    warp_shuffle_body<int>(input, output, scratch, n, exclusive, phase);
}
extern "C" __global__ void __launch_bounds__(THREADS, LOOK_BACK_BLOCKS_PER_SM)
    scan_look_back_i32_cuda(const int* input, size_t input_len, int* output, size_t output_len, int* scratch,
                            size_t scratch_len, unsigned n, unsigned exclusive, unsigned phase) {
    look_back_body<int, OneThread>(input, output, scratch, n, exclusive, phase);
}
extern "C" __global__ void __launch_bounds__(THREADS, LOOK_BACK_BLOCKS_PER_SM)
    scan_look_back_warp_i32_cuda(const int* input, size_t input_len, int* output, size_t output_len, int* scratch,
                                 size_t scratch_len, unsigned n, unsigned exclusive, unsigned phase) {
    look_back_body<int, WholeWarp>(input, output, scratch, n, exclusive, phase);
}
extern "C" __global__ void __launch_bounds__(THREADS, PIPELINED_BLOCKS_PER_SM)
    scan_look_back_pipelined_i32_cuda(const int* input, size_t input_len, int* output, size_t output_len, int* scratch,
                                      size_t scratch_len, unsigned n, unsigned exclusive, unsigned phase) {
    pipelined_body<int>(input, output, scratch, n, exclusive, phase);
}
extern "C" __global__ void __launch_bounds__(THREADS, STAGED_BLOCKS_PER_SM)
    scan_look_back_staged_i32_cuda(const int* input, size_t input_len, int* output, size_t output_len, int* scratch,
                                   size_t scratch_len, unsigned n, unsigned exclusive, unsigned phase) {
    staged_body<int>(input, output, scratch, n, exclusive, phase);
}
