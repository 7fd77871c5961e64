// kernels::scan::integer: the scans on int, exact (wrapping): three phases, and both walks of
// the single pass.
#include "look_back.cuh"
extern "C" __global__ void scan_warp_shuffle_i32_cuda(const int* input, int* output, int* scratch, unsigned n,
                                                      unsigned exclusive, unsigned phase) {
    warp_shuffle_body<int>(input, output, scratch, n, exclusive, phase);
}
extern "C" __global__ void scan_look_back_i32_cuda(const int* input, int* output, int* scratch, unsigned n,
                                                   unsigned exclusive, unsigned phase) {
    look_back_body<int, OneThread>(input, output, scratch, n, exclusive, phase);
}
extern "C" __global__ void scan_look_back_warp_i32_cuda(const int* input, int* output, int* scratch, unsigned n,
                                                        unsigned exclusive, unsigned phase) {
    look_back_body<int, WholeWarp>(input, output, scratch, n, exclusive, phase);
}
