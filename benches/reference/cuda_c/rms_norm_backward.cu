// kernels::norm::backward, RMS norm's input gradient.
#include "norm_backward.cuh"
extern "C" __global__ void rms_norm_backward_cuda(NORM_BACKWARD_PARAMETERS) {
    norm_backward_row<false>(input, grad_output, weight, weight_len, mean, rstd, grad_input, cols);
}
