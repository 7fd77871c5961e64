// C = A·B for A of up to 16 rows (kernels::matmul_bf16::swapped): Cᵀ = Bᵀ·Aᵀ on
// wgmma.m64n16k16 with A transposed, B's 64 columns the instruction's rows and A's 16 rows its N.
// A block (a consumer warpgroup, then a producer warp) takes a strip of 128 columns of C and a run
// of k (grid z); one producer thread fills a six-slot ring by TMA (per step of 64 k: A's 64×16 box,
// rows past m zero-filled, then B's two 64×64 atoms), the consumers multiply each slot with one
// wgmma group in flight and hand it back by mbarrier. Each consumer warp's runs meet in C on its
// own counter (k_runs.cuh). f32 C only (the Rust rung's bf16 C meets in partial sums). Needs nvcc
// -arch=sm_90a; the host passes tensor maps of A (box 64×16) and B (box 64×64), or it traps.
#define SW_ROWS 16
#define SW_ATOMS 2
#define SW_COLUMNS (64 * SW_ATOMS)
#define SW_BK 64
#define SW_STAGES 6
#define SW_WARPGROUP 128
#define SW_THREADS (SW_WARPGROUP + 32)
#define SW_WARPS 4
#define ROW_BYTES 128
#define SW_SLOT_ROWS (SW_ROWS + SW_ATOMS * SW_BK)

#include "hopper.cuh"
#include "k_runs.cuh"

__device__ __forceinline__ void wgmma16_transposed_a(float (&d)[8], unsigned long long a, unsigned long long b) {
    asm volatile(
        "{ .reg .pred p; setp.ne.b32 p, %10, 0; "
        "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, 1, "
        "0; }"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
        : "l"(a), "l"(b), "r"(1));
}

extern "C" __global__ void __launch_bounds__(SW_THREADS, 2)
    matmul_bf16_swapped_cuda(const unsigned short* a, const unsigned short* b, float* c, unsigned m, unsigned n,
                             unsigned k, const void* maps, unsigned* arrivals) {
    (void)a;
    (void)b;
    if (maps == nullptr) __trap();
    KRun run = run_of_k<SW_BK>(k);
    if (run.begin == run.end) return;
    // The launch's dynamic shared memory, carved as the Rust kernel carves it: the ring of 128-byte
    // rows (used from the first 1024-byte boundary), then the 2·SW_STAGES barriers.
    extern __shared__ __align__(16) unsigned shared[];
    unsigned long long* barriers =
        (unsigned long long*)(shared + (SW_STAGES * SW_SLOT_ROWS + 1024 / ROW_BYTES) * (ROW_BYTES / 4));
    unsigned tid = threadIdx.x;
    unsigned groups = (m + SW_ROWS - 1) / SW_ROWS;
    unsigned row0 = (blockIdx.x % groups) * SW_ROWS, col0 = (blockIdx.x / groups) * SW_COLUMNS;
    unsigned base = (unsigned)__cvta_generic_to_shared(shared);
    unsigned skew = (1024 - base % 1024) % 1024 / ROW_BYTES;
    unsigned full0 = (unsigned)__cvta_generic_to_shared(barriers), empty0 = full0 + 8 * SW_STAGES;
    if (tid == 0) {
        for (unsigned s = 0; s < SW_STAGES; ++s) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(full0 + 8 * s), "r"(1));
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(empty0 + 8 * s), "r"(SW_WARPGROUP));
        }
    }
    __syncthreads();
    unsigned first_step = run.begin / SW_BK, steps = (run.end + SW_BK - 1) / SW_BK;
    unsigned warp = __shfl_sync(0xffffffff, tid / 32, 0);
    if (warp == SW_WARPS) {
        if (tid == SW_WARPGROUP) {
            const char* b_map = (const char*)maps + 128;
            for (unsigned step = first_step; step < steps; ++step) {
                unsigned fill = step - first_step, slot = fill % SW_STAGES, full = full0 + 8 * slot;
                barrier_wait(empty0 + 8 * slot, ((fill / SW_STAGES) & 1) ^ 1);
                asm volatile(
                    "{ .reg .b64 state; mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1; }" ::"r"(full),
                    "r"(SW_SLOT_ROWS * ROW_BYTES));
                unsigned first = base + (skew + slot * SW_SLOT_ROWS) * ROW_BYTES;
                tma_load(first, maps, step * SW_BK, row0, full);
                for (unsigned atom = 0; atom < SW_ATOMS; ++atom)
                    tma_load(first + (SW_ROWS + SW_BK * atom) * ROW_BYTES, b_map, col0 + 64 * atom, step * SW_BK,
                             full);
            }
        }
        return;
    }
    float sums[SW_ATOMS][8] = {};
    for (unsigned step = first_step; step < steps; ++step) {
        unsigned fill = step - first_step, slot = fill % SW_STAGES;
        barrier_wait(full0 + 8 * slot, (fill / SW_STAGES) & 1);
        asm volatile("fence.proxy.async.shared::cta;");
        unsigned first = base + (skew + slot * SW_SLOT_ROWS) * ROW_BYTES;
        asm volatile("wgmma.fence.sync.aligned;");
#pragma unroll
        for (unsigned kk = 0; kk < SW_BK / 16; ++kk) {
            unsigned long long rows_of_a = descriptor(first + 32 * kk, 16, 1024);
#pragma unroll
            for (unsigned atom = 0; atom < SW_ATOMS; ++atom) {
                unsigned rows = first + (SW_ROWS + SW_BK * atom + 16 * kk) * ROW_BYTES;
                wgmma16_transposed_a(sums[atom], descriptor(rows, SW_BK * ROW_BYTES, 1024), rows_of_a);
            }
        }
        asm volatile("wgmma.commit_group.sync.aligned;");
        asm volatile("wgmma.wait_group.sync.aligned 1;");
        if (fill > 0) barrier_arrive(empty0 + 8 * ((fill - 1) % SW_STAGES));
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;");
    unsigned lane = tid % 32, group = lane / 4, member = lane % 4;
    // Register 4·j + r of an atom: column 16·warp + group + 8·(r / 2) of the atom, row
    // 8·j + 2·member + r % 2 of A's group.
    auto write = [&](bool adding) {
#pragma unroll
        for (unsigned atom = 0; atom < SW_ATOMS; ++atom) {
#pragma unroll
            for (unsigned i = 0; i < 8; ++i) {
                unsigned j = i / 4, r = i % 4;
                unsigned col = col0 + 64 * atom + 16 * warp + group + 8 * (r / 2);
                unsigned row = row0 + 8 * j + 2 * member + r % 2;
                if (row < m && col < n) {
                    float* at = c + (size_t)row * n + col;
                    if (adding)
                        red_add(at, sums[atom][i]);
                    else
                        *at = sums[atom][i];
                }
            }
        }
    };
    unsigned place = ((blockIdx.y * gridDim.x + blockIdx.x) * SW_WARPS + warp);
    meet_in_c_warp(arrivals + place, blockIdx.z, run.runs, write);
}
