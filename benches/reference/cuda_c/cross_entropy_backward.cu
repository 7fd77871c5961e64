// kernels::cross_entropy::backward: the logits' gradient (e^(x − lse) − [c = target])·s, a block
// per row, one read and one write; ignored rows written 0 without a read.
#include "cross_entropy.cuh"
extern "C" __global__ void cross_entropy_backward_cuda(const float* logits, size_t logits_len, const long long* targets,
                                                    size_t targets_len, const float* lse, size_t lse_len,
                                                    const float* grad_loss, size_t grad_loss_len, const float* count,
                                                    size_t count_len, float* grad_logits, size_t grad_logits_len,
                                                    unsigned rows, unsigned cols, long long ignore_index) {
    unsigned row = blockIdx.x, t = threadIdx.x;
    size_t base = (size_t)row * cols;
    float* dst = grad_logits + base;
    long long target = targets[row];
    if (target == ignore_index) {
        fill_row(dst, cols, t, 0.0f);
        return;
    }
    bool valid = in_range(target, cols);
    float scale = grad_loss[grad_loss_len == 1 ? 0 : row];
    if (count_len != 0) scale = __fdiv_rn(scale, count[0]);
    if (!valid) scale = __int_as_float(0x7fc00000);
    float row_lse = lse[row];
    unsigned hit = valid ? (unsigned)target : cols;
    map_row(logits + base, dst, cols, t, [&](unsigned c, float x) {
        float p = fast_exp(x - row_lse);
        return __fmul_rn(c == hit ? p - 1.0f : p, scale);
    });
}
