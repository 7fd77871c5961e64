// kernels::cross_entropy::pipelined: cross_entropy_fused with each block taking rows a grid apart,
// the next row's loads (row_on_chip.cuh's on_chip_load) issued right after this row's gradient;
// every element of a counted row's gradient written as if it were not the target's, the target's
// put right by thread 0 after a barrier. Rows past the chip read twice (statistics, gradient).
#pragma once
#include "row_on_chip.cuh"

__device__ __forceinline__ float ce_scale(long long target, unsigned cols, const float* count, unsigned mean) {
    return !in_range(target, cols) ? __int_as_float(0x7fc00000) : mean != 0 ? __fdiv_rn(1.0f, count[0]) : 1.0f;
}

__device__ __forceinline__ void put_loss(float* losses, float* stats, unsigned row, float loss, float row_max,
                                         float ln_sum) {
    if (threadIdx.x == 0) {
        losses[row] = loss;
        stats[2 * row] = row_max;
        stats[2 * row + 1] = ln_sum;
    }
}

// kernels::cross_entropy::pipelined::put_target_gradient.
template <class E>
__device__ __forceinline__ void put_target_gradient(const E* src, E* dst, unsigned cols, long long target,
                                                    const float* count, unsigned mean, const float* stats,
                                                    unsigned row) {
    if (!in_range(target, cols)) return;
    __syncthreads();
    if (threadIdx.x == 0) {
        float p = fast_exp((Element<E>::to_f32(src[target]) - stats[2 * row]) - stats[2 * row + 1]);
        dst[target] = Element<E>::from_f32((p - 1.0f) * ce_scale(target, cols, count, mean));
    }
}

template <class E>
__device__ __forceinline__ void ce_fused_pipelined(const E* logits, const long long* targets, const float* count,
                                                   float* losses, float* stats, float* total, size_t total_len,
                                                   unsigned* ticket, E* grad, unsigned rows, unsigned cols,
                                                   long long ignore_index, unsigned mean) {
    extern __shared__ float4 staged[];  // F_STAGED rows of F_THREADS vectors, then the warps' pairs
    float* maxes = (float*)(staged + F_STAGED * F_THREADS);
    float* sums = maxes + F_WARPS;
    unsigned* last = (unsigned*)(sums + F_WARPS);
    unsigned t = threadIdx.x, row = blockIdx.x;
    auto off_target = [](float mx, float ls, float scale) {
        return [=](unsigned, float v) { return fast_exp((v - mx) - ls) * scale; };
    };
    if (cols > Element<E>::LANES * f_on_chip_span<E>()) {
        for (; row < rows; row += gridDim.x) {
            const E* src = logits + (size_t)row * cols;
            E* dst = grad + (size_t)row * cols;
            long long target = targets[row];
            if (target == ignore_index) {
                put_loss(losses, stats, row, 0.0f, 0.0f, 0.0f);
                fill_row<F_THREADS>(dst, cols, t, 0.0f);
                continue;
            }
            Running running = RUNNING_EMPTY;
            read_row<F_THREADS>(src, cols, t, [&](unsigned, float v) { running = running_add(running, v); });
            Running merged = block_running<F_WARPS>(maxes, sums, running);
            float ln_sum = fast_ln(merged.sum);
            float picked = in_range(target, cols) ? Element<E>::to_f32(src[target]) : __int_as_float(0x7fc00000);
            put_loss(losses, stats, row, (merged.max - picked) + ln_sum, merged.max, ln_sum);
            map_row<F_THREADS>(src, dst, cols, t, off_target(merged.max, ln_sum, ce_scale(target, cols, count, mean)));
            put_target_gradient(src, dst, cols, target, count, mean, stats, row);
        }
    } else {
        auto counted = [&](unsigned r) { return r < rows && targets[r] != ignore_index; };
        Held held;
        if (counted(row)) held = on_chip_load(logits + (size_t)row * cols, cols, staged);
        while (row < rows) {
            const E* src = logits + (size_t)row * cols;
            E* dst = grad + (size_t)row * cols;
            long long target = targets[row];
            if (target == ignore_index) {
                put_loss(losses, stats, row, 0.0f, 0.0f, 0.0f);
                fill_row<F_THREADS>(dst, cols, t, 0.0f);
            } else {
                Running merged = on_chip_statistics<E>(held, staged, maxes, sums, RUNNING_EMPTY);
                float ln_sum = fast_ln(merged.sum);
                float picked = in_range(target, cols) ? Element<E>::to_f32(src[target]) : __int_as_float(0x7fc00000);
                put_loss(losses, stats, row, (merged.max - picked) + ln_sum, merged.max, ln_sum);
                on_chip_write<E, false>(src, dst, cols, held, staged,
                                        off_target(merged.max, ln_sum, ce_scale(target, cols, count, mean)));
            }
            unsigned next = row + gridDim.x;
            if (counted(next)) held = on_chip_load(logits + (size_t)next * cols, cols, staged);
            target = targets[row];
            if (target != ignore_index) put_target_gradient(src, dst, cols, target, count, mean, stats, row);
            row = next;
        }
    }
    if (total_len == 0) return;
    total_by_last_block<F_THREADS, F_WARPS>(sums, last, losses, targets, total, ticket, rows, ignore_index, mean);
}
