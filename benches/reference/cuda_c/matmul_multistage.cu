// kernels::matmul::multistage at the Rust kernel's 128×128, 128×256 and 128×64 tiles
// (matmul_multistage.cuh).
#include "matmul_multistage.cuh"

extern "C" __global__ void __launch_bounds__(128, 2)
    matmul_multistage_cuda(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k,
                           unsigned* /* arrivals: split-k's */) {
    Multistage<128, 128, 2, 4>::run(a, b, c, m, n, k);
}
extern "C" __global__ void __launch_bounds__(256, 1)
    matmul_multistage_128x256_cuda(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k,
                                   unsigned* /* arrivals: split-k's */) {
    Multistage<128, 256, 2, 4>::run(a, b, c, m, n, k);
}
extern "C" __global__ void __launch_bounds__(128, 3)
    matmul_multistage_128x64_cuda(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k,
                                  unsigned* /* arrivals: split-k's */) {
    Multistage<128, 64, 2, 2>::run(a, b, c, m, n, k);
}
