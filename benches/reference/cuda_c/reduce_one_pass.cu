// kernels::reduce::one_pass: the vectorised walk; partial sums published before a ticket, the last
// block adds them in block order and resets the ticket.
#include "reduce.cuh"
extern "C" __global__ void reduce_one_pass_cuda(const float* input, size_t input_len, float* output, size_t output_len,
                                             unsigned* ticket, size_t ticket_len, unsigned n) {
    extern __shared__ float sums[];
    unsigned* last = (unsigned*)(sums + WARPS);
    unsigned t = threadIdx.x, blocks = gridDim.x;
    float partial = block_sum(sums, thread_sum(input, n));
    if (t == 0) {
        output[1 + blockIdx.x] = partial;
        __threadfence();
        unsigned taken = atomicAdd(ticket, 1u);
        *last = taken == blocks - 1;
    }
    __syncthreads();
    if (*last) {
        __threadfence();
        float sum = 0.0f;
        for (unsigned b = t; b < blocks; b += THREADS) sum += __int_as_float(__ldcg((const int*)output + 1 + b));
        float total = block_sum(sums, sum);
        if (t == 0) {
            output[0] = total;
            *(volatile unsigned*)ticket = 0;
        }
    }
}
