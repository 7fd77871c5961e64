// kernels::norm::weight_grad: the norms' weight and bias gradients, sums down the columns of dy·x̂
// and dy; a block per strip of 32 columns, lane l its column, warp w rows w, w + 8, …; the warps'
// sums added in warp order.
#pragma once
#define THREADS 256u
#define WARPS (THREADS / 32u)

template <bool CENTERED>
__device__ __forceinline__ void norm_weight_grad_strip(const float* input, const float* grad_output, const float* mean,
                                                       const float* rstd, float* dweight, float* dbias,
                                                       size_t dbias_len, unsigned rows, unsigned cols) {
    extern __shared__ float partials[];
    float *weight_sums = partials, *bias_sums = partials + WARPS * 32;
    unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, c = blockIdx.x * 32 + lane;
    float sum_w = 0.0f, sum_b = 0.0f;
    if (c < cols) {
        for (unsigned r = warp; r < rows; r += WARPS) {
            size_t at = (size_t)r * cols + c;
            float mu = CENTERED ? mean[r] : 0.0f;
            float dy = grad_output[at];
            sum_w = __fadd_rn(sum_w, __fmul_rn(dy, __fmul_rn(input[at] - mu, rstd[r])));
            sum_b = __fadd_rn(sum_b, dy);
        }
    }
    weight_sums[warp * 32 + lane] = sum_w;
    bias_sums[warp * 32 + lane] = sum_b;
    __syncthreads();
    if (warp == 0 && c < cols) {
        float total_w = 0.0f, total_b = 0.0f;
        for (unsigned w = 0; w < WARPS; ++w) total_w += weight_sums[w * 32 + lane], total_b += bias_sums[w * 32 + lane];
        dweight[c] = total_w;
        if (dbias_len != 0) dbias[c] = total_b;
    }
}

#define NORM_WEIGHT_GRAD_PARAMETERS                                                                            \
    const float *input, size_t input_len, const float *grad_output, size_t grad_output_len, const float *mean,  \
        size_t mean_len, const float *rstd, size_t rstd_len, float *dweight, size_t dweight_len, float *dbias, \
        size_t dbias_len, unsigned rows, unsigned cols
