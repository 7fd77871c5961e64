// kernels::cross_entropy::scale: block r multiplies row r of the fused pass's gradient by its loss
// gradient in place, unless that is 1 or the row's target is ignored.
#include "cross_entropy_scale.cuh"
extern "C" __global__ void cross_entropy_scale_cuda(const long long* targets, size_t targets_len, const float* grad_loss,
                                                    size_t grad_loss_len, float* grad, size_t grad_len, unsigned rows,
                                                    unsigned cols, long long ignore_index) {
    ce_scale(targets, grad_loss, grad_loss_len, grad, cols, ignore_index);
}
