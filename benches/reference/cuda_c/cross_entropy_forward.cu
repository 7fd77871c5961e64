// kernels::cross_entropy::forward: a warp or a block per row, one read (running maximum and sum),
// the loss and the row's (max, ln sum) out; the last block to take a ticket adds the losses in row order and counts
// the rows.
#include "cross_entropy_forward.cuh"
extern "C" __global__ void cross_entropy_forward_cuda(const float* logits, size_t logits_len, const long long* targets,
                                                   size_t targets_len, float* losses, size_t losses_len, float* stats,
                                                   size_t stats_len, float* total, size_t total_len, unsigned* ticket,
                                                   size_t ticket_len, unsigned rows, unsigned cols, long long ignore_index,
                                                   unsigned mean) {
    ce_forward(logits, targets, losses, stats, total, total_len, ticket, rows, cols, ignore_index, mean);
}
