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

typedef unsigned short bf16;

__device__ __forceinline__ unsigned long long descriptor(unsigned address, unsigned leading, unsigned stride) {
    auto field = [](unsigned bytes) { return (unsigned long long)((bytes >> 4) & 0x3fff); };
    return field(address) | (field(leading) << 16) | (field(stride) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma(float (&d)[64], unsigned long long a, unsigned long long b) {
    asm volatile(
        "{ .reg .pred p; setp.ne.b32 p, %66, 0; "
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 1; }"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(a), "l"(b), "r"(1));
}

__device__ __forceinline__ void copy16(unsigned dst, const void* src, bool inside) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(inside ? 16 : 0));
}

__device__ __forceinline__ unsigned element_or_zero(const bf16* matrix, unsigned at, bool inside) {
    return inside ? matrix[at] : 0u;
}

// One 16-byte chunk into ring word `word` (of the 32 words of row `row`).
__device__ __forceinline__ void chunk(unsigned* ring, unsigned row, unsigned word, bool aligned, const bf16* matrix,
                                      unsigned at, bool row_inside, unsigned limit, unsigned along) {
    unsigned* dst = ring + row * (ROW_BYTES / 4) + word;
    if (aligned) {
        bool inside = row_inside && along < limit;
        copy16((unsigned)__cvta_generic_to_shared(dst), inside ? matrix + at : matrix, inside);
    } else {
#pragma unroll
        for (unsigned w = 0; w < 4; ++w) {
            unsigned x = 2 * w;
            dst[w] = element_or_zero(matrix, at + x, row_inside && along + x < limit) |
                     (element_or_zero(matrix, at + x + 1, row_inside && along + x + 1 < limit) << 16);
        }
    }
}

__device__ __forceinline__ void stage(unsigned* ring, const bf16* a, const bf16* b, unsigned m, unsigned n,
                                      unsigned k, unsigned row0, unsigned col0, bool aligned, unsigned tid,
                                      unsigned step, unsigned first) {
    unsigned k0 = step * BK;
#pragma unroll
    for (unsigned i = 0; i < BM * BK / 8 / THREADS; ++i) {
        unsigned e = tid + i * THREADS, r = e / (BK / 8), c = e % (BK / 8);
        unsigned row = row0 + r, at = k0 + 8 * c;
        chunk(ring, first + r, 4 * (c ^ (r % 8)), aligned, a, row * k + at, row < m, k, at);
    }
#pragma unroll
    for (unsigned i = 0; i < BK * BN / 8 / THREADS; ++i) {
        unsigned e = tid + i * THREADS, r = e / (BN / 8), c = e % (BN / 8);
        unsigned at = k0 + r, column = col0 + 8 * c;
        chunk(ring, first + BM + BK * (c / 8) + r, 4 * ((c % 8) ^ (r % 8)), aligned, b, at * n + column, at < k, n,
              column);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 2)
    matmul_bf16_wgmma_cuda(const bf16* a, const bf16* b, float* c, unsigned m, unsigned n, unsigned k,
                             const void* maps /* the TMA kernel's; unused here */) {
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
        if (s < steps) stage(shared, a, b, m, n, k, row0, col0, aligned, tid, s, skew + s * SLOT_ROWS);
        asm volatile("cp.async.commit_group;");
    }
    float acc[64] = {};
    for (unsigned step = 0; step < steps; ++step) {
        asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2));
        asm volatile("fence.proxy.async.shared::cta;");
        __syncthreads();
        unsigned next = step + STAGES - 1;
        if (next < steps)
            stage(shared, a, b, m, n, k, row0, col0, aligned, tid, next, skew + (next % STAGES) * SLOT_ROWS);
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
