// kernels::cross_entropy::forward over bf16 logits (cross_entropy_forward.cuh).
#include "cross_entropy_forward.cuh"
extern "C" __global__ void cross_entropy_forward_bf16_cuda(const unsigned short* logits, size_t logits_len, const long long* targets,
                                                   size_t targets_len, float* losses, size_t losses_len, float* stats,
                                                   size_t stats_len, float* total, size_t total_len, unsigned* ticket,
                                                   size_t ticket_len, unsigned rows, unsigned cols, long long ignore_index,
                                                   unsigned mean) {
    ce_forward(logits, targets, losses, stats, total, total_len, ticket, rows, cols, ignore_index, mean);
}
