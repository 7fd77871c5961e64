// kernels::norm::residual, layer norm of x + residual, f32.
#include "norm_residual.cuh"
extern "C" __global__ void layer_norm_residual_cuda(RESIDUAL_PARAMETERS(float)) {
    residual_normalise<float, true>(input, input_len, residual, residual_len, sum, sum_len, weight, weight_len, bias,
                                bias_len, output, output_len, mean, mean_len, rstd, rstd_len, rows, cols, eps);
}
