// The seed's shared-memory example (kernels::shared_mem_add): stage a[i] + b[i], barrier, add the
// left neighbour's staged value. Block 256, one float of dynamic shared memory per thread.
extern "C" __global__ void shared_mem_add_cuda(const float* a, size_t a_len, const float* b, size_t b_len, float* out,
                                               size_t out_len, unsigned n) {
    extern __shared__ float staged[];
    unsigned t = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + t;
    staged[t] = i < n ? a[i] + b[i] : 0.0f;
    __syncthreads();
    if (i < n) out[i] = t == 0 ? staged[0] : staged[t] + staged[t - 1];
}
