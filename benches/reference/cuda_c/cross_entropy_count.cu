// kernels::cross_entropy::count: one block of 1024 counts the targets that are not ignore_index,
// four loads in flight per thread, into count[0] as a float.
#include "cross_entropy.cuh"
#define COUNT_THREADS 1024u
extern "C" __global__ void __launch_bounds__(1024, 1)
    cross_entropy_count_cuda(const long long* targets, size_t targets_len, float* count, size_t count_len,
                             unsigned rows, long long ignore_index) {
    __shared__ float sums[32];
    unsigned t = threadIdx.x, n = 0, r = t;
    for (; r + 3u * COUNT_THREADS < rows; r += 4u * COUNT_THREADS) {
        long long batch[4];
#pragma unroll
        for (unsigned i = 0; i < 4; ++i) batch[i] = targets[r + i * COUNT_THREADS];
#pragma unroll
        for (unsigned i = 0; i < 4; ++i) n += batch[i] != ignore_index;
    }
    for (; r < rows; r += COUNT_THREADS) n += targets[r] != ignore_index;
    float total = block_sum<32>(sums, (float)n);
    if (t == 0) count[0] = total;
}
