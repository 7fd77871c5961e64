// kernels::norm::weight_grad, RMS norm's weight (and bias) gradients.
#include "norm_weight_grad.cuh"
extern "C" __global__ void rms_norm_weight_grad_cuda(NORM_WEIGHT_GRAD_PARAMETERS) {
    norm_weight_grad_strip<false>(input, grad_output, mean, rstd, dweight, dbias, dbias_len, rows, cols);
}
