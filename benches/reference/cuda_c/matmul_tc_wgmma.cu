// C = A·B on TF32 by warp-specialised wgmma with the operands' roles swapped
// (kernels::matmul_tc::specialized): wgmma reads TF32 from shared memory K-major only, which
// row-major B is not, so each consumer warpgroup computes 64×256 of Cᵀ = Bᵀ·Aᵀ, Bᵀ's fragments
// loaded into registers from B's tile as copied (rows of k) and Aᵀ read by descriptor from A's rows.
// A block covers 256 rows × 128 columns of C per tile, on the persistent grid the host launches
// (tile_order.cuh: tiles in rows, and where C has few tiles, runs of k that meet in C by k_runs.cuh).
// A slot: A's 256 rows of 32 f32 (128-byte swizzle), then B's four 32-column boxes of 32 k-rows
// (the same swizzle). One producer thread fills a slot by TMA from the tensor maps in `maps` (A's,
// then B's); with no maps, the producer warpgroup copies by cp.async (16 bytes, or 4 where k or n
// is not a multiple of 4). setmaxnreg gives the consumers the producer's registers. Needs nvcc
// -arch=sm_90a. matmul_tc_wgmma_128x128_cuda is the same on 128-row tiles (m64n128k8), for C of at
// most 128 rows: six slots of 256 rows in the same ring, copied by TMA only (no maps: a trap), the
// producer keeping 56 registers and each consumer taking 224.
#define BN 128
#define BK 32
#define WARPGROUP 128
#define THREADS (3 * WARPGROUP)
#define ROW_BYTES 128
#define B_BOX_COLUMNS 32
// Rows of a slot for tiles of `rows` rows; the ring's rows (four slots of 256-row tiles); its slots.
#define SLOT_ROWS(rows) ((rows) + BK * (BN / B_BOX_COLUMNS))
#define RING_ROWS (4 * SLOT_ROWS(256))
#define STAGES(rows) (RING_ROWS / SLOT_ROWS(rows))
#define MAX_STAGES STAGES(128)

#include "hopper.cuh"
#include "k_runs.cuh"
#include "tile_order.cuh"

// acc += A·B: A 64×8 TF32 in four registers per lane (mma.sync's m16n8k8 order), B 8×256 given
// as its 256×8 transpose by descriptor.
__device__ __forceinline__ void wgmma_tf32(float (&d)[128], const unsigned (&a)[4], unsigned long long b) {
    asm volatile(
        "{ .reg .pred p; setp.ne.b32 p, %133, 0; "
        "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, {%128, %129, %130, %131}, %132, p, 1, 1; }"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

// As above with B 8×128: the 64×128 product.
__device__ __forceinline__ void wgmma_tf32(float (&d)[64], const unsigned (&a)[4], unsigned long long b) {
    asm volatile(
        "{ .reg .pred p; setp.ne.b32 p, %69, 0; "
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1; }"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

// wgmma.wait_group 1, the fragments of the groups it waits for named so that the compiler keeps
// them in their registers until then (the Rust kernel's wgmma_wait_reading).
__device__ __forceinline__ void wait_reading(const unsigned (&p)[2][4], const unsigned (&f)[2][4]) {
    asm volatile(
        "wgmma.wait_group.sync.aligned 1; // %0 %1 %2 %3 %4 %5 %6 %7 %8 %9 %10 %11 %12 %13 %14 %15" ::"r"(p[0][0]),
        "r"(p[0][1]), "r"(p[0][2]), "r"(p[0][3]), "r"(p[1][0]), "r"(p[1][1]), "r"(p[1][2]), "r"(p[1][3]), "r"(f[0][0]),
        "r"(f[0][1]), "r"(f[0][2]), "r"(f[0][3]), "r"(f[1][0]), "r"(f[1][1]), "r"(f[1][2]), "r"(f[1][3]));
}

// The word of ring row `first + ROWS + row` holding element (k-row r, column nn) of B's tile.
__device__ __forceinline__ void b_place(unsigned r, unsigned nn, unsigned& row, unsigned& word) {
    unsigned column = nn % B_BOX_COLUMNS;
    row = BK * (nn / B_BOX_COLUMNS) + r;
    word = 4 * ((column / 4) ^ (r % 8)) + column % 4;
}

// The first `valid` of the four f32 at matrix + offset into the ring at shared address `dst`, zeros
// after: one 16-byte copy, or four 4-byte ones.
template <bool VECTORS>
__device__ __forceinline__ void copy_chunk(unsigned dst, const float* matrix, unsigned offset, unsigned valid) {
    if (VECTORS) {
        const float* src = valid > 0 ? matrix + offset : matrix;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(4 * valid));
    } else {
#pragma unroll
        for (unsigned w = 0; w < 4; ++w) {
            const float* src = w < valid ? matrix + offset + w : matrix;
            asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst + 4 * w), "l"(src),
                         "r"(w < valid ? 4 : 0));
        }
    }
}

// Producer thread `tid`'s copies of k-step `step` into the slot at shared address `first`.
template <unsigned ROWS, bool VECTORS>
__device__ __forceinline__ void stage(unsigned first, const float* a, const float* b, unsigned m, unsigned n,
                                      unsigned k, unsigned row0, unsigned col0, unsigned tid, unsigned step) {
    unsigned k0 = step * BK;
    auto part = [](unsigned left) { return left < 4 ? left : 4u; };
    unsigned r0 = tid / (BK / 4), c = tid % (BK / 4), at = k0 + 4 * c, word = 4 * (c ^ (r0 % 8));
#pragma unroll
    for (unsigned i = 0; i < ROWS * BK / 4 / WARPGROUP; ++i) {
        unsigned r = r0 + i * (WARPGROUP / (BK / 4)), row = row0 + r;
        unsigned valid = row < m ? part(k > at ? k - at : 0) : 0;
        copy_chunk<VECTORS>(first + r * ROW_BYTES + 4 * word, a, row * k + at, valid);
    }
    r0 = tid / (BN / 4);
    c = tid % (BN / 4);
    unsigned column = col0 + 4 * c;
#pragma unroll
    for (unsigned i = 0; i < BK * BN / 4 / WARPGROUP; ++i) {
        unsigned r = r0 + i * (WARPGROUP / (BN / 4)), kr = k0 + r;
        unsigned valid = kr < k ? part(n > column ? n - column : 0) : 0;
        unsigned row, w;
        b_place(r, 4 * c, row, w);
        copy_chunk<VECTORS>(first + (ROWS + row) * ROW_BYTES + 4 * w, b, kr * n + column, valid);
    }
}

template <unsigned ROWS>
__device__ __forceinline__ void run(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k,
                                    const void* maps, unsigned* arrivals) {
    constexpr unsigned STAGE_COUNT = STAGES(ROWS), SLOT = SLOT_ROWS(ROWS);
    bool by_tma = maps != nullptr;
    // The launch's dynamic shared memory, carved as the Rust kernel carves it: the ring of 128-byte
    // rows (used from the first 1024-byte boundary), then the 2·MAX_STAGES barriers.
    extern __shared__ __align__(16) unsigned shared[];
    unsigned long long* barriers = (unsigned long long*)(shared + (RING_ROWS + 1024 / ROW_BYTES) * (ROW_BYTES / 4));
    unsigned tid = threadIdx.x;
    unsigned group = __shfl_sync(0xffffffff, tid / WARPGROUP, 0);
    // Worked out by each warpgroup where it starts on its items, so that none of it is held across
    // the register hand-over (where ptxas would spill it).
    auto work_of = [&] { return Work<ROWS, BN, false>(m, n, (k + BK - 1) / BK, gridDim.x); };
    unsigned base = (unsigned)__cvta_generic_to_shared(shared);
    unsigned skew = (1024 - base % 1024) % 1024 / ROW_BYTES;
    unsigned full0 = (unsigned)__cvta_generic_to_shared(barriers), empty0 = full0 + 8 * MAX_STAGES;
    if (tid == 0) {
        for (unsigned s = 0; s < STAGE_COUNT; ++s) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(full0 + 8 * s), "r"(by_tma ? 1 : WARPGROUP));
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(empty0 + 8 * s), "r"(2 * WARPGROUP));
        }
    }
    __syncthreads();
    // Fills of the ring counted across items: fill g goes to slot g % STAGE_COUNT, phase
    // g / STAGE_COUNT.
    unsigned fill = 0;
    if (group == 0) {
        if (ROWS == 256)
            asm volatile("setmaxnreg.dec.sync.aligned.u32 88;");
        else
            asm volatile("setmaxnreg.dec.sync.aligned.u32 56;");
        if (by_tma) {
            if (tid == 0) {
                const char* b_map = (const char*)maps + 128;
                const auto work = work_of();
                for (unsigned i = blockIdx.x; i < work.items(); i += gridDim.x) {
                    Item item = work.item(i);
                    unsigned row0 = item.row0, col0 = item.col0;
                    for (unsigned step = item.begin; step < item.end; ++step, ++fill) {
                        unsigned slot = fill % STAGE_COUNT, full = full0 + 8 * slot;
                        barrier_wait(empty0 + 8 * slot, ((fill / STAGE_COUNT) & 1) ^ 1);
                        asm volatile(
                            "{ .reg .b64 state; mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1; }" ::"r"(
                                full),
                            "r"(SLOT * ROW_BYTES));
                        unsigned first = base + (skew + slot * SLOT) * ROW_BYTES;
                        tma_load(first, maps, step * BK, row0, full);
                        for (unsigned box = 0; box < BN / B_BOX_COLUMNS; ++box)
                            tma_load(first + (ROWS + BK * box) * ROW_BYTES, b_map, col0 + B_BOX_COLUMNS * box,
                                     step * BK, full);
                    }
                }
            }
            return;
        }
        // The 128-row tiles copy by TMA only (their producer has too few registers for the copies).
        if (ROWS != 256) __trap();
        bool vectors = k % 4 == 0 && n % 4 == 0 && (size_t)a % 16 == 0 && (size_t)b % 16 == 0;
        const auto work = work_of();
        for (unsigned i = blockIdx.x; i < work.items(); i += gridDim.x) {
            Item item = work.item(i);
            unsigned row0 = item.row0, col0 = item.col0;
            for (unsigned step = item.begin; step < item.end; ++step, ++fill) {
                unsigned slot = fill % STAGE_COUNT;
                barrier_wait(empty0 + 8 * slot, ((fill / STAGE_COUNT) & 1) ^ 1);
                unsigned first = base + (skew + slot * SLOT) * ROW_BYTES;
                if (vectors)
                    stage<ROWS, true>(first, a, b, m, n, k, row0, col0, tid, step);
                else
                    stage<ROWS, false>(first, a, b, m, n, k, row0, col0, tid, step);
                asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(full0 + 8 * slot));
            }
        }
        return;
    }
    if (ROWS == 256)
        asm volatile("setmaxnreg.inc.sync.aligned.u32 208;");
    else
        asm volatile("setmaxnreg.inc.sync.aligned.u32 224;");
    unsigned consumer = group - 1;
    unsigned lane = tid % 32, columns = 64 * consumer + 16 * ((tid / 32) % 4);
    unsigned in_flight[2][4] = {};
    const auto work = work_of();
    for (unsigned i = blockIdx.x; i < work.items(); i += gridDim.x) {
        Item item = work.item(i);
        unsigned row0 = item.row0, col0 = item.col0;
        float acc[ROWS / 2] = {};
        for (unsigned step = item.begin; step < item.end; ++step, ++fill) {
            unsigned slot = fill % STAGE_COUNT;
            barrier_wait(full0 + 8 * slot, (fill / STAGE_COUNT) & 1);
            unsigned first_row = skew + slot * SLOT;
            asm volatile("fence.proxy.async.shared::cta;");
            // Two groups per slot, of two k-steps each.
#pragma unroll
            for (unsigned half = 0; half < 2; ++half) {
                unsigned fragments[2][4];
#pragma unroll
                for (unsigned kk = 0; kk < 2; ++kk)
#pragma unroll
                    for (unsigned r = 0; r < 4; ++r) {
                        // mma.sync's tf32 A order: row (a column of C) lane / 4 + 8·(r % 2), k lane % 4 + 4·(r / 2).
                        unsigned row, word;
                        b_place(16 * half + 8 * kk + lane % 4 + 4 * (r / 2), columns + lane / 4 + 8 * (r % 2), row,
                                word);
                        fragments[kk][r] = shared[(first_row + ROWS + row) * (ROW_BYTES / 4) + word];
                    }
                unsigned a_rows = base + first_row * ROW_BYTES + 64 * half;
                asm volatile("wgmma.fence.sync.aligned;");
#pragma unroll
                for (unsigned kk = 0; kk < 2; ++kk) wgmma_tf32(acc, fragments[kk], descriptor(a_rows + 32 * kk, 16, 1024));
                asm volatile("wgmma.commit_group.sync.aligned;");
                wait_reading(in_flight, fragments);
#pragma unroll
                for (unsigned kk = 0; kk < 2; ++kk)
#pragma unroll
                    for (unsigned r = 0; r < 4; ++r) in_flight[kk][r] = fragments[kk][r];
                if (half == 0 && step > item.begin) barrier_arrive(empty0 + 8 * ((fill - 1) % STAGE_COUNT));
            }
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;");
        barrier_arrive(empty0 + 8 * ((fill - 1) % STAGE_COUNT));
        // The accumulators hold Cᵀ: product row i is C's column, product column j C's row.
        // Where the tiles' k is cut into runs, each warp's part meets the other runs' in C on its
        // own counter.
        unsigned col = col0 + columns + lane / 4;
        meet_in_c_warp(arrivals + work.counter(item, 8) + tid / 32 - 4, item.run, item.runs, [&](bool adding) {
#pragma unroll
            for (unsigned j = 0; j < ROWS / 8; ++j)
#pragma unroll
                for (unsigned r = 0; r < 4; ++r) {
                    unsigned cc = col + 8 * (r / 2), row = row0 + 8 * j + 2 * (lane % 4) + r % 2;
                    if (row < m && cc < n) {
                        if (adding)
                            red_add(&c[row * n + cc], acc[4 * j + r]);
                        else
                            c[row * n + cc] = acc[4 * j + r];
                    }
                }
        });
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    matmul_tc_wgmma_cuda(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k,
                         const void* maps, unsigned* arrivals) {
    run<256>(a, b, c, m, n, k, maps, arrivals);
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    matmul_tc_wgmma_128x128_cuda(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k,
                                 const void* maps, unsigned* arrivals) {
    run<128>(a, b, c, m, n, k, maps, arrivals);
}
