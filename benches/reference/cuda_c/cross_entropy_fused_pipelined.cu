// kernels::cross_entropy::pipelined: cross_entropy_fused with each block taking rows a grid apart,
// the next row's loads (row_on_chip.cuh's on_chip_load) issued right after this row's gradient;
// every element of a counted row's gradient written as if it were not the target's, the target's
// put right by thread 0 after a barrier. Rows past the chip read twice (statistics, gradient).
#include "cross_entropy_fused_pipelined.cuh"

extern "C" __global__ void __launch_bounds__(1024, 1)
    cross_entropy_fused_pipelined_cuda(const float* logits, size_t logits_len, const long long* targets,
                                       size_t targets_len, const float* count, size_t count_len, float* losses,
                                       size_t losses_len, float* stats, size_t stats_len, float* total,
                                       size_t total_len, unsigned* ticket, size_t ticket_len, float* grad,
                                       size_t grad_len, unsigned rows, unsigned cols, long long ignore_index,
                                       unsigned mean) {
    ce_fused_pipelined(logits, targets, count, losses, stats, total, total_len, ticket, grad, rows, cols, ignore_index,
                       mean);
}
