// kernels::norm::residual, layer norm of x + residual, bf16.
#include "norm_residual.cuh"
extern "C" __global__ void layer_norm_residual_bf16_cuda(RESIDUAL_PARAMETERS(unsigned short)) {
    residual_normalise<unsigned short, true>(input, input_len, residual, residual_len, sum, sum_len, weight, weight_len, bias,
                                bias_len, output, output_len, mean, mean_len, rstd, rstd_len, rows, cols, eps);
}
