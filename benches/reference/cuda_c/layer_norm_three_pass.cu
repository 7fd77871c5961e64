// kernels::norm::three_pass, layer norm: a block per row, three reads of it.
#include "norm.cuh"
extern "C" __global__ void layer_norm_three_pass_cuda(NORM_PARAMETERS) {
    extern __shared__ float sums[];
    Affine affine{weight, weight_len, bias, bias_len, eps};
    block_row<true>(sums, input, output, affine, mean, mean_len, rstd, rstd_len, blockIdx.x, cols);
}
