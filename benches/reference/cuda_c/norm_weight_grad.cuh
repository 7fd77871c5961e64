// kernels::norm::weight_grad: the norms' weight and bias gradients, sums down the columns of dy·x̂
// and dy; a block of 32 warps per strip of 32 columns, lane l its column, warp w rows w, w + 32, …
// (four rows' loads at once, added in row order); the warps' sums added in warp order.
#pragma once
#define WG_THREADS 1024u
#define WG_WARPS (WG_THREADS / 32u)
#define WG_UNROLL 4u

template <bool CENTERED>
__device__ __forceinline__ void norm_weight_grad_strip(const float* input, const float* grad_output, const float* mean,
                                                       const float* rstd, float* dweight, float* dbias,
                                                       size_t dbias_len, unsigned rows, unsigned cols) {
    extern __shared__ float partials[];
    float *weight_sums = partials, *bias_sums = partials + WG_WARPS * 32;
    unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, c = blockIdx.x * 32 + lane;
    float sum_w = 0.0f, sum_b = 0.0f;
    auto terms = [&](unsigned r, float& dy, float& term) {
        size_t at = (size_t)r * cols + c;
        float mu = CENTERED ? mean[r] : 0.0f;
        dy = grad_output[at];
        term = __fmul_rn(dy, __fmul_rn(input[at] - mu, rstd[r]));
    };
    if (c < cols) {
        unsigned r = warp;
        for (; r + (WG_UNROLL - 1) * WG_WARPS < rows; r += WG_UNROLL * WG_WARPS) {
            float dy[WG_UNROLL], term[WG_UNROLL];
#pragma unroll
            for (unsigned k = 0; k < WG_UNROLL; ++k) terms(r + k * WG_WARPS, dy[k], term[k]);
#pragma unroll
            for (unsigned k = 0; k < WG_UNROLL; ++k) sum_b = __fadd_rn(sum_b, dy[k]), sum_w = __fadd_rn(sum_w, term[k]);
        }
        for (; r < rows; r += WG_WARPS) {
            float dy, term;
            terms(r, dy, term);
            sum_b = __fadd_rn(sum_b, dy);
            sum_w = __fadd_rn(sum_w, term);
        }
    }
    weight_sums[warp * 32 + lane] = sum_w;
    bias_sums[warp * 32 + lane] = sum_b;
    __syncthreads();
    if (warp == 0 && c < cols) {
        float total_w = 0.0f, total_b = 0.0f;
        for (unsigned w = 0; w < WG_WARPS; ++w) total_w += weight_sums[w * 32 + lane], total_b += bias_sums[w * 32 + lane];
        dweight[c] = total_w;
        if (dbias_len != 0) dbias[c] = total_b;
    }
}

#define NORM_WEIGHT_GRAD_PARAMETERS                                                                            \
    const float *input, size_t input_len, const float *grad_output, size_t grad_output_len, const float *mean,  \
        size_t mean_len, const float *rstd, size_t rstd_len, float *dweight, size_t dweight_len, float *dbias, \
        size_t dbias_len, unsigned rows, unsigned cols
