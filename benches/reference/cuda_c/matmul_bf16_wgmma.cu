// C = A·B with bf16 A and B, f32 sums and C, by Hopper's wgmma (kernels::matmul_bf16::wgmma): two
// warpgroups per 128×128 tile of C, each 64×128 with wgmma.m64n128k16; k-steps of 64 staged by
// 16-byte cp.async into a three-slot ring in the 128-byte swizzle (A K-major, B MN-major in two
// 64-column atoms), the slot's wgmmas waited for before the barrier that lets it be refilled.
// Needs nvcc -arch=sm_90a.
#define BM 128
#define BN 128
#define BK 64
#define STAGES 3
#define THREADS 256
#define ROW_BYTES 128
#define SLOT_ROWS (BM + 2 * BK)

#include "matmul_bf16_swizzled.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 2)
    matmul_bf16_wgmma_cuda(const bf16* a, const bf16* b, float* c, unsigned m, unsigned n, unsigned k,
                             const void* maps /* the TMA kernel's; unused here */,
    unsigned* arrivals /* the small-m rungs'; unused here */) {
    // The launch's dynamic shared memory, carved as the Rust kernel carves it: 128-byte rows,
    // the ring starting at the first 1024-byte boundary.
    extern __shared__ __align__(16) unsigned shared[];
    unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32, group = warp / 4, warp_in_group = warp % 4;
    unsigned row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    unsigned base = (unsigned)__cvta_generic_to_shared(shared);
    unsigned skew = (1024 - base % 1024) % 1024 / ROW_BYTES;
    bool aligned = k % 8 == 0 && n % 8 == 0 && (size_t)a % 16 == 0 && (size_t)b % 16 == 0;
    unsigned steps = (k + BK - 1) / BK;
#pragma unroll
    for (unsigned s = 0; s < STAGES - 1; ++s) {
        if (s < steps) stage_swizzled<THREADS, BN>(shared, a, b, m, n, k, row0, col0, aligned, tid, s, skew + s * SLOT_ROWS);
        asm volatile("cp.async.commit_group;");
    }
    float acc[64] = {};
    for (unsigned step = 0; step < steps; ++step) {
        asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2));
        asm volatile("fence.proxy.async.shared::cta;");
        __syncthreads();
        unsigned next = step + STAGES - 1;
        if (next < steps)
            stage_swizzled<THREADS, BN>(shared, a, b, m, n, k, row0, col0, aligned, tid, next, skew + (next % STAGES) * SLOT_ROWS);
        asm volatile("cp.async.commit_group;");
        unsigned first = base + (skew + (step % STAGES) * SLOT_ROWS) * ROW_BYTES;
        unsigned a_rows = first + 64 * group * ROW_BYTES, b_rows = first + BM * ROW_BYTES;
        asm volatile("wgmma.fence.sync.aligned;");
#pragma unroll
        for (unsigned kk = 0; kk < BK / 16; ++kk)
            wgmma(acc, descriptor(a_rows + 32 * kk, 16, 1024),
                  descriptor(b_rows + 16 * ROW_BYTES * kk, BK * ROW_BYTES, 1024));
        asm volatile("wgmma.commit_group.sync.aligned;");
        asm volatile("wgmma.wait_group.sync.aligned 0;");
    }
    unsigned row = row0 + 64 * group + 16 * warp_in_group + lane / 4;
#pragma unroll
    for (unsigned j = 0; j < BN / 8; ++j)
#pragma unroll
        for (unsigned r = 0; r < 4; ++r) {
            unsigned rr = row + 8 * (r / 2), col = col0 + 8 * j + 2 * (lane % 4) + r % 2;
            if (rr < m && col < n) c[rr * n + col] = acc[4 * j + r];
        }
}
