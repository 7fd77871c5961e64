// kernels::scan::integer: the single-pass scans on int, exact (wrapping), both walks.
#include "look_back.cuh"
extern "C" __global__ void scan_look_back_i32_cuda(const int* input, int* output, int* scratch, unsigned n,
                                                   unsigned exclusive, unsigned phase) {
    look_back_body<int, OneThread>(input, output, scratch, n, exclusive, phase);
}
extern "C" __global__ void scan_look_back_warp_i32_cuda(const int* input, int* output, int* scratch, unsigned n,
                                                        unsigned exclusive, unsigned phase) {
    look_back_body<int, WholeWarp>(input, output, scratch, n, exclusive, phase);
}
