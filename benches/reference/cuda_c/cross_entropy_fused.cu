// kernels::cross_entropy::fused: block r takes row r once for its loss, (max, ln sum) and gradient
// (for a loss gradient of 1, divided by the count for a mean), each thread's sum from its own
// maximum and the pairs merged over the block: 6 vectors a thread in registers,
// the next 10 in shared memory by cp.async, the elements before the first 16-byte boundary and
// after the last vector one a thread; past 65536 classes the rest streamed (a running pair) and read
// again for its gradient. The last block to take a ticket adds the losses.
#include "cross_entropy.cuh"
#define F_THREADS 1024u
#define F_WARPS 32u
#define F_VECTORS 6u
#define F_STAGED 10u
#define F_REGISTER_SPAN (F_THREADS * F_VECTORS)
#define F_ON_CHIP_SPAN (F_THREADS * (F_VECTORS + F_STAGED))
#define F_BATCH 4u

// kernels::cross_entropy::fused::stream: the streamed vectors of thread t, four loads in flight.
template <typename See>
__device__ __forceinline__ void stream(const float* src, unsigned head, unsigned vectors, unsigned t, See see) {
    unsigned v = F_ON_CHIP_SPAN + t;
    for (; v + (F_BATCH - 1) * F_THREADS < vectors; v += F_BATCH * F_THREADS) {
        float4 x[F_BATCH];
#pragma unroll
        for (unsigned i = 0; i < F_BATCH; ++i) x[i] = *(const float4*)(src + head + 4 * (v + i * F_THREADS));
#pragma unroll
        for (unsigned i = 0; i < F_BATCH; ++i) see(v + i * F_THREADS, x[i]);
    }
    for (; v < vectors; v += F_THREADS) see(v, *(const float4*)(src + head + 4 * v));
}

extern "C" __global__ void __launch_bounds__(1024, 1)
    cross_entropy_fused_cuda(const float* logits, size_t logits_len, const long long* targets, size_t targets_len,
                             const float* count, size_t count_len, float* losses, size_t losses_len, float* stats,
                             size_t stats_len, float* total, size_t total_len, unsigned* ticket, size_t ticket_len,
                             float* grad, size_t grad_len, unsigned rows, unsigned cols, long long ignore_index,
                             unsigned mean) {
    extern __shared__ float4 staged[];  // F_STAGED rows of F_THREADS vectors, then the warps' pairs
    float* maxes = (float*)(staged + F_STAGED * F_THREADS);
    float* sums = maxes + F_WARPS;
    unsigned* last = (unsigned*)(sums + F_WARPS);
    unsigned row = blockIdx.x, t = threadIdx.x;
    const float* src = logits + (size_t)row * cols;
    float* dst = grad + (size_t)row * cols;
    long long target = targets[row];
    float loss = 0.0f, row_max = 0.0f, ln_sum = 0.0f;
    if (target == ignore_index) {
        fill_row<F_THREADS>(dst, cols, t, 0.0f);
    } else {
        float scale = !in_range(target, cols) ? __int_as_float(0x7fc00000) : mean != 0 ? __fdiv_rn(1.0f, count[0]) : 1.0f;
        unsigned head, vectors;
        split(src, cols, head, vectors);
#pragma unroll
        for (unsigned j = 0; j < F_STAGED; ++j) {
            unsigned v = F_REGISTER_SPAN + t + F_THREADS * j;
            if (v < vectors) {
                unsigned address = (unsigned)__cvta_generic_to_shared(staged + j * F_THREADS + t);
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(address), "l"(src + head + 4 * v));
            }
        }
        asm volatile("cp.async.commit_group;");
        Running running = RUNNING_EMPTY;
        stream(src, head, vectors, t, [&](unsigned, float4 x) {
            running = running_add(running, x.x);
            running = running_add(running, x.y);
            running = running_add(running, x.z);
            running = running_add(running, x.w);
        });
        float4 x[F_VECTORS];
#pragma unroll
        for (unsigned i = 0; i < F_VECTORS; ++i) {
            unsigned v = t + F_THREADS * i;
            x[i] = v < vectors ? *(const float4*)(src + head + 4 * v) : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
        }
        unsigned first = t, last_column = head + 4 * vectors + t;
        auto edge = [&](unsigned which) {
            if (which == 0) return first < head ? src[first] : -INFINITY;
            return last_column < cols ? src[last_column] : -INFINITY;
        };
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        auto larger = [](float m, float v) { return v > m ? v : m; };
        float m = larger(larger(running.max, edge(0)), edge(1));
#pragma unroll
        for (unsigned i = 0; i < F_VECTORS; ++i) m = larger(larger(larger(larger(m, x[i].x), x[i].y), x[i].z), x[i].w);
#pragma unroll
        for (unsigned j = 0; j < F_STAGED; ++j)
            if (F_REGISTER_SPAN + t + F_THREADS * j < vectors) {
                float4 s = staged[j * F_THREADS + t];
                m = larger(larger(larger(larger(m, s.x), s.y), s.z), s.w);
            }
        float sum = running.sum * fast_exp(running.max - m);
        sum += fast_exp(edge(0) - m);
        sum += fast_exp(edge(1) - m);
#pragma unroll
        for (unsigned i = 0; i < F_VECTORS; ++i)
            if (t + F_THREADS * i < vectors) {
                sum += fast_exp(x[i].x - m);
                sum += fast_exp(x[i].y - m);
                sum += fast_exp(x[i].z - m);
                sum += fast_exp(x[i].w - m);
            }
#pragma unroll
        for (unsigned j = 0; j < F_STAGED; ++j)
            if (F_REGISTER_SPAN + t + F_THREADS * j < vectors) {
                float4 s = staged[j * F_THREADS + t];
                sum += fast_exp(s.x - m);
                sum += fast_exp(s.y - m);
                sum += fast_exp(s.z - m);
                sum += fast_exp(s.w - m);
            }
        Running merged = block_running<F_WARPS>(maxes, sums, {m, sum});
        row_max = merged.max;
        sum = merged.sum;
        ln_sum = fast_ln(sum);
        float picked = in_range(target, cols) ? src[target] : __int_as_float(0x7fc00000);
        loss = (row_max - picked) + ln_sum;
        unsigned hit = in_range(target, cols) ? (unsigned)target : cols;
        float mx = row_max, ls = ln_sum;
        auto gradient = [=](unsigned c, float v) {
            float p = fast_exp((v - mx) - ls);
            return (c == hit ? p - 1.0f : p) * scale;
        };
        if (((size_t)src - (size_t)dst) % 16 != 0) {
            map_row<F_THREADS>(src, dst, cols, t, gradient);
        } else {
            auto four = [&](unsigned v, float4 y) {
                unsigned c = head + 4 * v;
                return make_float4(gradient(c, y.x), gradient(c + 1, y.y), gradient(c + 2, y.z), gradient(c + 3, y.w));
            };
#pragma unroll
            for (unsigned i = 0; i < F_VECTORS; ++i) {
                unsigned v = t + F_THREADS * i;
                if (v < vectors) *(float4*)(dst + head + 4 * v) = four(v, x[i]);
            }
            if (first < head) dst[first] = gradient(first, edge(0));
            if (last_column < cols) dst[last_column] = gradient(last_column, edge(1));
#pragma unroll
            for (unsigned j = 0; j < F_STAGED; ++j) {
                unsigned v = F_REGISTER_SPAN + t + F_THREADS * j;
                if (v < vectors) *(float4*)(dst + head + 4 * v) = four(v, staged[j * F_THREADS + t]);
            }
            stream(src, head, vectors, t, [&](unsigned v, float4 y) { *(float4*)(dst + head + 4 * v) = four(v, y); });
        }
    }
    if (t == 0) {
        losses[row] = loss;
        stats[2 * row] = row_max;
        stats[2 * row + 1] = ln_sum;
    }
    if (total_len == 0) return;
    __syncthreads();
    if (t == 0) {
        __threadfence();
        *last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (*last) {
        __threadfence();
        float s = 0.0f, n = 0.0f;
        for (unsigned r = t; r < rows; r += F_THREADS) {
            s += __int_as_float(__ldcg((const int*)losses + r));
            if (targets[r] != ignore_index) n += 1.0f;
        }
        n = block_sum<F_WARPS>(sums, n);
        if (t == 0) total[1] = n;
        s = block_sum<F_WARPS>(sums, s);
        if (t == 0) {
            total[0] = mean != 0 ? __fdiv_rn(s, n) : s;
            *(volatile unsigned*)ticket = 0;
        }
    }
}
