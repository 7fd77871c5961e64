// kernels::norm::three_pass, RMS norm: a block per row, two reads of it and the outputs.
#include "norm.cuh"
extern "C" __global__ void rms_norm_three_pass_cuda(NORM_PARAMETERS) {
    extern __shared__ float sums[];
    Affine affine{weight, weight_len, bias, bias_len, eps};
    block_row<false>(sums, input, output, affine, mean, mean_len, rstd, rstd_len, blockIdx.x, cols);
}
