// Helpers of the bf16 wgmma twins (matmul_bf16_wgmma.cu, matmul_bf16_specialized.cu): one wgmma
// shape, and the staging of a k-step into a slot of 128-byte rows
// (A's BM rows K-major, then B's 64-column atoms MN-major, chunk c of row r at c ^ (r % 8)), as
// kernels::matmul_bf16::swizzled does. The including file defines BM, BK and ROW_BYTES.
#pragma once

#include "hopper.cuh"

typedef unsigned short bf16;

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

template <unsigned STAGERS, unsigned TILE_N>
__device__ __forceinline__ void stage_swizzled(unsigned* ring, const bf16* a, const bf16* b, unsigned m, unsigned n,
                                      unsigned k, unsigned row0, unsigned col0, bool aligned, unsigned tid,
                                      unsigned step, unsigned first) {
    unsigned k0 = step * BK;
#pragma unroll
    for (unsigned i = 0; i < BM * BK / 8 / STAGERS; ++i) {
        unsigned e = tid + i * STAGERS, r = e / (BK / 8), c = e % (BK / 8);
        unsigned row = row0 + r, at = k0 + 8 * c;
        chunk(ring, first + r, 4 * (c ^ (r % 8)), aligned, a, row * k + at, row < m, k, at);
    }
#pragma unroll
    for (unsigned i = 0; i < BK * TILE_N / 8 / STAGERS; ++i) {
        unsigned e = tid + i * STAGERS, r = e / (TILE_N / 8), c = e % (TILE_N / 8);
        unsigned at = k0 + r, column = col0 + 8 * c;
        chunk(ring, first + BM + BK * (c / 8) + r, 4 * ((c % 8) ^ (r % 8)), aligned, b, at * n + column, at < k, n,
              column);
    }
}

