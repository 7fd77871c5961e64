// kernels::cross_entropy::scale over a bf16 gradient (cross_entropy_scale.cuh).
#include "cross_entropy_scale.cuh"
extern "C" __global__ void cross_entropy_scale_bf16_cuda(const long long* targets, size_t targets_len, const float* grad_loss,
                                                    size_t grad_loss_len, unsigned short* grad, size_t grad_len, unsigned rows,
                                                    unsigned cols, long long ignore_index) {
    ce_scale(targets, grad_loss, grad_loss_len, grad, cols, ignore_index);
}
