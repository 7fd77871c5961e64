// kernels::norm::backward_fused::norm_partials_sum: thread c adds column c of both halves of the
// partials, in block order, into dweight[c] and (where wanted) dbias[c].
extern "C" __global__ void norm_partials_sum_cuda(const float* partials, size_t partials_len, float* dweight,
                                                  size_t dweight_len, float* dbias, size_t dbias_len, unsigned blocks,
                                                  unsigned cols) {
    unsigned c = blockIdx.x * 256u + threadIdx.x;
    if (c >= cols) return;
    size_t half = (size_t)blocks * cols;
    float w = 0.0f, b = 0.0f;
    for (unsigned k = 0; k < blocks; ++k) {
        size_t at = (size_t)k * cols + c;
        w = __fadd_rn(w, partials[at]);
        b = __fadd_rn(b, partials[half + at]);
    }
    dweight[c] = w;
    if (dbias_len != 0) dbias[c] = b;
}
