// kernels::cross_entropy::backward over bf16 logits and gradient (cross_entropy_backward.cuh).
#include "cross_entropy_backward.cuh"
extern "C" __global__ void cross_entropy_backward_bf16_cuda(const unsigned short* logits, size_t logits_len, const long long* targets,
                                                    size_t targets_len, const float* stats, size_t stats_len,
                                                    const float* grad_loss, size_t grad_loss_len, const float* count,
                                                    size_t count_len, unsigned short* grad_logits, size_t grad_logits_len,
                                                    unsigned rows, unsigned cols, long long ignore_index) {
    ce_backward(logits, targets, stats, grad_loss, grad_loss_len, count, count_len, grad_logits, rows, cols, ignore_index);
}
