// kernels::cross_entropy::forward: a block per row, one read (running maximum and sum), the loss
// and lse out; the last block to take a ticket adds the losses in row order and counts the rows.
#include "cross_entropy.cuh"
extern "C" __global__ void cross_entropy_forward_cuda(const float* logits, size_t logits_len, const long long* targets,
                                                   size_t targets_len, float* losses, size_t losses_len, float* lse,
                                                   size_t lse_len, float* total, size_t total_len, unsigned* ticket,
                                                   size_t ticket_len, unsigned rows, unsigned cols, long long ignore_index,
                                                   unsigned mean) {
    __shared__ float maxes[WARPS], sums[WARPS];
    __shared__ unsigned last;
    unsigned row = blockIdx.x, t = threadIdx.x;
    long long target = targets[row];
    float loss = 0.0f, row_lse = 0.0f;
    if (target != ignore_index) {
        const float* x = logits + (size_t)row * cols;
        Running running = RUNNING_EMPTY;
        read_row(x, cols, t, [&](unsigned, float v) { running = running_add(running, v); });
        Running stats = block_running(maxes, sums, running);
        row_lse = stats.max + fast_ln(stats.sum);
        float picked = in_range(target, cols) ? x[target] : __int_as_float(0x7fc00000);
        loss = row_lse - picked;
    }
    if (t == 0) {
        losses[row] = loss;
        lse[row] = row_lse;
    }
    if (total_len == 0) return;
    if (t == 0) {
        __threadfence();
        last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (last) {
        __threadfence();
        float sum = 0.0f, count = 0.0f;
        for (unsigned r = t; r < rows; r += THREADS) {
            sum += __int_as_float(__ldcg((const int*)losses + r));
            if (targets[r] != ignore_index) count += 1.0f;
        }
        sum = block_sum(sums, sum);
        count = block_sum(sums, count);
        if (t == 0) {
            total[0] = mean != 0 ? __fdiv_rn(sum, count) : sum;
            total[1] = count;
            *(volatile unsigned*)ticket = 0;
        }
    }
}
