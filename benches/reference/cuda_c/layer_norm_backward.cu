// kernels::norm::backward, layer norm's input gradient.
#include "norm_backward.cuh"
extern "C" __global__ void layer_norm_backward_cuda(NORM_BACKWARD_PARAMETERS) {
    norm_backward_row<true>(input, grad_output, weight, weight_len, mean, rstd, grad_input, cols);
}
