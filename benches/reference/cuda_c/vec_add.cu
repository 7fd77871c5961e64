// out[i] = a[i] + b[i]; block 256, one element per thread (kernels::vec_add).
extern "C" __global__ void vec_add_cuda(const float* a, size_t a_len, const float* b, size_t b_len, float* out,
                                        size_t out_len, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
