// kernels::norm::registers, RMS norm.
#include "norm_registers.cuh"
extern "C" __global__ void rms_norm_registers_cuda(NORM_PARAMETERS) {
    normalise<false>(input, output, Affine{weight, weight_len, bias, bias_len, eps}, mean, mean_len, rstd, rstd_len,
                     rows, cols);
}
