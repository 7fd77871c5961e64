// kernels::cross_entropy::pipelined over bf16 logits and gradient (cross_entropy_fused_pipelined.cuh).
#include "cross_entropy_fused_pipelined.cuh"

extern "C" __global__ void __launch_bounds__(1024, 1)
    cross_entropy_fused_pipelined_bf16_cuda(const unsigned short* logits, size_t logits_len, const long long* targets,
                                       size_t targets_len, const float* count, size_t count_len, float* losses,
                                       size_t losses_len, float* stats, size_t stats_len, float* total,
                                       size_t total_len, unsigned* ticket, size_t ticket_len, unsigned short* grad,
                                       size_t grad_len, unsigned rows, unsigned cols, long long ignore_index,
                                       unsigned mean) {
    ce_fused_pipelined(logits, targets, count, losses, stats, total, total_len, ticket, grad, rows, cols, ignore_index,
                       mean);
}
