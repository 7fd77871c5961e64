// C = A·B, one thread per element of C, operands from global memory (kernels::matmul::naive).
// Block 16×16.
extern "C" __global__ void matmul_naive_cuda(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k, unsigned* /* arrivals: split-k's */) {
    unsigned row = blockIdx.y * blockDim.y + threadIdx.y;
    unsigned col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m && col < n) {
        float sum = 0.0f;
        for (unsigned i = 0; i < k; ++i) sum += a[row * k + i] * b[i * n + col];
        c[row * n + col] = sum;
    }
}
