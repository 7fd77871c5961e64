// kernels::norm::registers, layer norm.
#include "norm_registers.cuh"
extern "C" __global__ void layer_norm_registers_cuda(NORM_PARAMETERS) {
    normalise<true>(input, output, Affine{weight, weight_len, bias, bias_len, eps}, mean, mean_len, rstd, rstd_len,
                    rows, cols);
}
