// kernels::norm::backward_fused, layer norm's three gradients from one read of x and dy.
#include "norm_backward_fused.cuh"
extern "C" __global__ void __launch_bounds__(FUSED_THREADS, 2) layer_norm_backward_fused_cuda(FUSED_PARAMETERS) {
    norm_backward_run<true>(input, grad_output, weight, weight_len, mean, rstd, grad_input, partials, rows, cols);
}
