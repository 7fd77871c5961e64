// out[i] = a[i] + b[i]; block 256, one element per thread (kernels::vec_add).
extern "C" __global__ void vec_add_cuda(const float* a, const float* b, float* out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
