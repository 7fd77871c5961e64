// Gather (kernels::gather): output[i] = source[index[i]], NaN where the index is past the source.
extern "C" __global__ void gather_cuda(const float* source, size_t source_len, const unsigned* index, size_t index_len,
                                       float* output, size_t output_len, unsigned n, unsigned len) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned at = index[i];
        output[i] = at < len ? source[at] : __int_as_float(0x7fc00000);
    }
}
