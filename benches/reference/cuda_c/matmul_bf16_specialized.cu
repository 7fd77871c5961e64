// C = A·B with bf16 A and B, f32 sums and C, by warp-specialised wgmma
// (kernels::matmul_bf16::specialized): per 128×256 tile of C a producer warpgroup copies k-steps
// of 64 into a four-slot ring (cp.async, 128-byte swizzle: A K-major, B MN-major in four 64-column
// atoms) and two consumer warpgroups multiply 64×256 each with wgmma.m64n256k16, the slots handed
// over by mbarriers (full: producers' copies landed; empty: consumers' wgmmas done), one wgmma group
// in flight. Needs nvcc -arch=sm_90a.
//
// matmul_bf16_tma_cuda (kernels::matmul_bf16::specialized, KERNEL_TMA): the same, one producer
// thread filling each slot by TMA from the tensor maps the host passes in `maps` (A's, then B's,
// 128 bytes each; without them it traps), the producer's registers handed to the consumers, which
// store C's unaligned rows 16 bytes at a time. matmul_bf16_persistent_cuda: the same body on the
// persistent grid the host launches (each block taking every gridDim.x-th item: tile_order.cuh,
// tiles in rows, or in bands where C is wide; where C has few tiles, runs of k, and where the last
// wave would be part-empty, runs of its tiles; runs meet in C by k_runs.cuh).
//
// matmul_bf16_clustered_cuda (kernels::matmul_bf16::specialized, KERNEL_CLUSTERED): the persistent
// body in clusters of two blocks (__cluster_dims__) that take two tiles one above the other (items
// of 256 rows): each copies its own rows of A and half of B's atoms, these by TMA multicast into
// both blocks; each consumer warp, done with a slot, arrives on the slot's empty barrier in both
// (lane r on block r's, through mapa), so a slot is refilled once both blocks are done with it.
#define BM 128
#define BN 256
#define BK 64
#define STAGES 4
#define WARPGROUP 128
#define THREADS (3 * WARPGROUP)
#define ROW_BYTES 128
#define SLOT_ROWS (BM + (BN / 64) * BK)

#include "matmul_bf16_swizzled.cuh"
#include "k_runs.cuh"
#include "tile_order.cuh"

__device__ __forceinline__ void wgmma256(float (&d)[128], unsigned long long a, unsigned long long b) {
    asm volatile(
        "{ .reg .pred p; setp.ne.b32 p, %130, 0; "
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 1; }"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(a), "l"(b), "r"(1));
}

template <bool TMA, unsigned CTAS = 1>
__device__ __forceinline__ void specialized(const bf16* a, const bf16* b, float* c, unsigned m, unsigned n,
                                            unsigned k, const void* maps, unsigned* arrivals) {
    if (TMA && maps == nullptr) __trap();  // the host always gives the TMA rungs maps
    bool by_tma = TMA;
    // The launch's dynamic shared memory, carved as the Rust kernel carves it: the ring of 128-byte
    // rows (used from the first 1024-byte boundary), then the 2·STAGES barriers.
    extern __shared__ __align__(16) unsigned shared[];
    unsigned long long* barriers =
        (unsigned long long*)(shared + (STAGES * SLOT_ROWS + 1024 / ROW_BYTES) * (ROW_BYTES / 4));
    unsigned tid = threadIdx.x;
    unsigned group = __shfl_sync(0xffffffff, tid / WARPGROUP, 0);
    // The items this block computes (tile_order.cuh): one with a grid of one block per tile; on
    // the persistent grid whole tiles in band order, runs of their k where the grid has more
    // blocks than C has tiles, or of the last wave's tiles where it would be part-empty.
    // Worked out by each warpgroup where it starts on its items, so that none of it is held across
    // the register hand-over (where ptxas would spill it).
    auto work_of = [&] { return Work<BM * CTAS, BN, true>(m, n, (k + BK - 1) / BK, gridDim.x / CTAS); };
    // The walk's index is the cluster's; the block's rows of its items are the rank's.
    unsigned rank = 0;
    if (CTAS > 1) asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    unsigned walker = blockIdx.x / CTAS;
    unsigned base = (unsigned)__cvta_generic_to_shared(shared);
    unsigned skew = (1024 - base % 1024) % 1024 / ROW_BYTES;
    unsigned full0 = (unsigned)__cvta_generic_to_shared(barriers), empty0 = full0 + 8 * STAGES;
    if (tid == 0) {
        for (unsigned s = 0; s < STAGES; ++s) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(full0 + 8 * s), "r"(by_tma ? 1 : WARPGROUP));
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(empty0 + 8 * s),
                         "r"(CTAS > 1 ? CTAS * 8 : 2 * WARPGROUP));
        }
        if (CTAS > 1) asm volatile("fence.mbarrier_init.release.cluster;");
    }
    if (CTAS > 1)
        asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;");
    else
        __syncthreads();
    // Fills of the ring counted across items: fill g goes to slot g % STAGES, phase g / STAGES.
    unsigned fill = 0;
    // With TMA the producer's registers go to the consumers, whose regrouped stores need more
    // than 168.
    if (group == 0 && TMA) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 56;");
        if (tid == 0) {
            const char* b_map = (const char*)maps + 128;
            const auto work = work_of();
            for (unsigned i = walker; i < work.items(); i += gridDim.x / CTAS) {
                Item item = work.item(i);
                unsigned row0 = item.row0 + BM * rank, col0 = item.col0;
                for (unsigned step = item.begin; step < item.end; ++step, ++fill) {
                    unsigned slot = fill % STAGES, full = full0 + 8 * slot;
                    barrier_wait(empty0 + 8 * slot, ((fill / STAGES) & 1) ^ 1);
                    asm volatile(
                        "{ .reg .b64 state; mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1; }" ::"r"(full),
                        "r"(SLOT_ROWS * ROW_BYTES));
                    unsigned first = base + (skew + slot * SLOT_ROWS) * ROW_BYTES;
                    tma_load(first, maps, step * BK, row0, full);
                    for (unsigned atom = 0; atom < BN / 64; ++atom) {
                        unsigned dst = first + (BM + BK * atom) * ROW_BYTES;
                        if (CTAS == 1)
                            tma_load(dst, b_map, col0 + 64 * atom, step * BK, full);
                        else if (atom % CTAS == rank)
                            asm volatile(
                                "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                                " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
                                "l"(b_map), "r"(col0 + 64 * atom), "r"(step * BK), "r"(full),
                                "h"((unsigned short)((1u << CTAS) - 1))
                                : "memory");
                    }
                }
            }
        }
        return;
    }
    if (group == 0) {
        bool aligned = k % 8 == 0 && n % 8 == 0 && (size_t)a % 16 == 0 && (size_t)b % 16 == 0;
        const auto work = work_of();
        for (unsigned i = blockIdx.x; i < work.items(); i += gridDim.x) {
            Item item = work.item(i);
            unsigned row0 = item.row0, col0 = item.col0;
            for (unsigned step = item.begin; step < item.end; ++step, ++fill) {
                unsigned slot = fill % STAGES;
                barrier_wait(empty0 + 8 * slot, ((fill / STAGES) & 1) ^ 1);
                stage_swizzled<WARPGROUP, BN>(shared, a, b, m, n, k, row0, col0, aligned, tid, step,
                                              skew + slot * SLOT_ROWS);
                if (aligned) {
                    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(full0 + 8 * slot));
                } else {
                    asm volatile("fence.proxy.async.shared::cta;");
                    barrier_arrive(full0 + 8 * slot);
                }
            }
        }
        return;
    }
    if (TMA) asm volatile("setmaxnreg.inc.sync.aligned.u32 224;");
    unsigned consumer = group - 1;
    unsigned lane = tid % 32, warp_in_group = (tid / 32) % 4;
    // A slot goes back to the producers: each consumer thread's arrival, or in clusters each
    // consumer warp's on every block's barrier (lane r on block r's).
    auto release = [&](unsigned slot) {
        if (CTAS == 1) {
            barrier_arrive(empty0 + 8 * slot);
        } else if (lane < CTAS) {
            unsigned peer;
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(peer) : "r"(empty0 + 8 * slot), "r"(lane));
            asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(peer) : "memory");
        }
    };
    const auto work = work_of();
    for (unsigned i = walker; i < work.items(); i += gridDim.x / CTAS) {
        Item item = work.item(i);
        unsigned row0 = item.row0 + BM * rank, col0 = item.col0;
        float acc[128] = {};
        for (unsigned step = item.begin; step < item.end; ++step, ++fill) {
            unsigned slot = fill % STAGES;
            barrier_wait(full0 + 8 * slot, (fill / STAGES) & 1);
            asm volatile("fence.proxy.async.shared::cta;");
            unsigned first = base + (skew + slot * SLOT_ROWS) * ROW_BYTES;
            unsigned a_rows = first + 64 * consumer * ROW_BYTES, b_rows = first + BM * ROW_BYTES;
            asm volatile("wgmma.fence.sync.aligned;");
#pragma unroll
            for (unsigned kk = 0; kk < BK / 16; ++kk)
                wgmma256(acc, descriptor(a_rows + 32 * kk, 16, 1024),
                         descriptor(b_rows + 16 * ROW_BYTES * kk, BK * ROW_BYTES, 1024));
            asm volatile("wgmma.commit_group.sync.aligned;");
            asm volatile("wgmma.wait_group.sync.aligned 1;");
            if (step > item.begin) release((fill - 1) % STAGES);
        }
        // The tile's last group and its slot, while the producer fills the ring for the next tile.
        asm volatile("wgmma.wait_group.sync.aligned 0;");
        release((fill - 1) % STAGES);
        // Where the tiles' k is cut into runs, each warp's part meets the other runs' in C on its
        // own counter.
        unsigned row = row0 + 64 * consumer + 16 * warp_in_group + lane / 4;
        meet_in_c_warp(arrivals + work.counter(item, 8 * CTAS) + 8 * rank + tid / 32 - 4, item.run, item.runs,
                       [&](bool adding) {
            if (n % 4 == 0 && (reinterpret_cast<unsigned long long>(c) % 16) == 0) {
                // Over each pair of 8-column blocks, lanes 2q and 2q + 1 of a quad swap one pair
                // of sums so that each holds four consecutive columns: one 16-byte store (or
                // vector red) each (kernels::matmul_bf16::store's store_vectors).
                unsigned odd = lane % 2, lane_col = col0 + 8 * odd + 2 * (lane % 4 - odd);
                unsigned cols_left = n > lane_col ? n - lane_col : 0;
#pragma unroll
                for (unsigned pair = 0; pair < BN / 16; ++pair)
#pragma unroll
                    for (unsigned half = 0; half < 2; ++half) {
                        unsigned b0 = 4 * (2 * pair) + 2 * half, b1 = 4 * (2 * pair + 1) + 2 * half;
                        float give0 = odd ? acc[b0] : acc[b1], give1 = odd ? acc[b0 + 1] : acc[b1 + 1];
                        float got0 = __shfl_xor_sync(0xffffffffu, give0, 1);
                        float got1 = __shfl_xor_sync(0xffffffffu, give1, 1);
                        float4 four = odd ? make_float4(got0, got1, acc[b1], acc[b1 + 1])
                                          : make_float4(acc[b0], acc[b0 + 1], got0, got1);
                        unsigned rr = row + 8 * half, offset = 16 * pair;
                        if (rr < m && offset < cols_left) {
                            float* first = c + (rr * n + lane_col) + offset;
                            if (adding)
                                red_add4(first, four);
                            else
                                *reinterpret_cast<float4*>(first) = four;
                        }
                    }
                return;
            }
            if (!TMA) {
                // The cp.async rung: rows not all 16-byte aligned element by element.
#pragma unroll
                for (unsigned j = 0; j < BN / 8; ++j)
#pragma unroll
                    for (unsigned r = 0; r < 4; ++r) {
                        unsigned rr = row + 8 * (r / 2), col = col0 + 8 * j + 2 * (lane % 4) + r % 2;
                        if (rr < m && col < n) {
                            if (adding)
                                red_add(&c[rr * n + col], acc[4 * j + r]);
                            else
                                c[rr * n + col] = acc[4 * j + r];
                        }
                    }
                return;
            }
            // Rows not all 16-byte aligned: each row's columns regrouped in fours from the row's
            // first 16-byte boundary, h columns on; a lane stores its own last 4 - h and the first
            // h of the lane holding the next four (the quad's last lane: the next pair's first
            // four); a tile's first h and last 4 - h columns of a row, and fours crossing C's last
            // column, element by element (kernels::matmul_bf16::store's store_shifted).
            unsigned quad = lane % 4, odd = lane % 2, lane_col = col0 + 8 * odd + 2 * (quad - odd);
            unsigned swapped = (quad >> 1) | ((quad & 1) << 1), next = (swapped + 1) % 4;
            unsigned next_lane = (lane & ~3u) + ((next >> 1) | ((next & 1) << 1));
            bool leads = quad == 0;
            auto merged = [&](unsigned pair, unsigned half, float* out) {
                unsigned b0 = 4 * (2 * pair) + 2 * half, b1 = 4 * (2 * pair + 1) + 2 * half;
                float give0 = odd ? acc[b0] : acc[b1], give1 = odd ? acc[b0 + 1] : acc[b1 + 1];
                float got0 = __shfl_xor_sync(0xffffffffu, give0, 1);
                float got1 = __shfl_xor_sync(0xffffffffu, give1, 1);
                out[0] = odd ? got0 : acc[b0];
                out[1] = odd ? got1 : acc[b0 + 1];
                out[2] = odd ? acc[b1] : got0;
                out[3] = odd ? acc[b1 + 1] : got1;
            };
            auto put = [&](float* at, float x) {
                if (adding)
                    red_add(at, x);
                else
                    *at = x;
            };
#pragma unroll
            for (unsigned half = 0; half < 2; ++half) {
                unsigned rr = row + 8 * half;
                float* start = c + rr * n;
                unsigned h = (unsigned)((0ull - reinterpret_cast<unsigned long long>(start)) / 4 % 4);
                bool inside = rr < m;
                float own[4], ahead[4], got[4];
                merged(0, half, own);
#pragma unroll
                for (unsigned pair = 0; pair < BN / 16; ++pair) {
                    bool last = pair + 1 == BN / 16;
                    if (last)
                        for (unsigned e = 0; e < 4; ++e) ahead[e] = own[e];
                    else
                        merged(pair + 1, half, ahead);
#pragma unroll
                    for (unsigned e = 0; e < 4; ++e) got[e] = __shfl_sync(0xffffffffu, leads ? ahead[e] : own[e], next_lane);
                    unsigned first = lane_col + 16 * pair;
                    if (inside && leads && pair == 0)
#pragma unroll
                        for (unsigned e = 0; e < 4; ++e)
                            if (e < h && first + e < n) put(start + first + e, own[e]);
                    if (inside && last && quad == 3 && h > 0) {
#pragma unroll
                        for (unsigned e = 0; e < 4; ++e)
                            if (e >= h && first + e < n) put(start + first + e, own[e]);
                    } else if (inside) {
                        float4 four = h == 0   ? make_float4(own[0], own[1], own[2], own[3])
                                      : h == 1 ? make_float4(own[1], own[2], own[3], got[0])
                                      : h == 2 ? make_float4(own[2], own[3], got[0], got[1])
                                               : make_float4(own[3], got[0], got[1], got[2]);
                        unsigned at = first + h;
                        if (at + 3 < n) {
                            if (adding)
                                red_add4(start + at, four);
                            else
                                *reinterpret_cast<float4*>(start + at) = four;
                        } else {
                            float f[4] = {four.x, four.y, four.z, four.w};
#pragma unroll
                            for (unsigned e = 0; e < 4; ++e)
                                if (at + e < n) put(start + at + e, f[e]);
                        }
                    }
#pragma unroll
                    for (unsigned e = 0; e < 4; ++e) own[e] = ahead[e];
                }
            }
        });
    }
    // The other block's consumers may still arrive on this block's barriers, and its producer's
    // copies land in this ring, until they are done: neither block exits before.
    if (CTAS > 1) asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;");
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    matmul_bf16_specialized_cuda(const bf16* a, const bf16* b, float* c, unsigned m, unsigned n, unsigned k,
                                 const void* maps,
    unsigned* arrivals) {
    specialized<false>(a, b, c, m, n, k, maps, arrivals);
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    matmul_bf16_tma_cuda(const bf16* a, const bf16* b, float* c, unsigned m, unsigned n, unsigned k,
                         const void* maps,
    unsigned* arrivals) {
    specialized<true>(a, b, c, m, n, k, maps, arrivals);
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    matmul_bf16_persistent_cuda(const bf16* a, const bf16* b, float* c, unsigned m, unsigned n, unsigned k,
                                const void* maps,
    unsigned* arrivals) {
    specialized<true>(a, b, c, m, n, k, maps, arrivals);
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(THREADS, 1)
    matmul_bf16_clustered_cuda(const bf16* a, const bf16* b, float* c, unsigned m, unsigned n, unsigned k,
                               const void* maps, unsigned* arrivals) {
    specialized<true, 2>(a, b, c, m, n, k, maps, arrivals);
}
