// The vectorised transpose of kernels::transpose::vectorized: a T×T tile padded to T+1 floats a
// row, 256 threads, float4 global accesses when rows and cols are multiples of 4 and both arrays
// are 16-byte aligned, else the same tile one float at a time.
#pragma once

#define THREADS 256u

template <unsigned T>
__device__ void vectorized_transpose(const float* input, float* output, unsigned rows, unsigned cols) {
    extern __shared__ float tile[];
    const unsigned pitch = T + 1;
    unsigned t = threadIdx.x;
    unsigned tile_row = blockIdx.y * T, tile_col = blockIdx.x * T;
    bool vector = rows % 4 == 0 && cols % 4 == 0 && ((unsigned long long)input % 16 == 0) &&
                  ((unsigned long long)output % 16 == 0);
    if (vector) {
        const unsigned per_row = T / 4;
#pragma unroll
        for (unsigned pass = 0; pass < T * per_row / THREADS; ++pass) {
            unsigned i = t + pass * THREADS;
            unsigned r = i / per_row, c = 4 * (i % per_row);
            unsigned row = tile_row + r, col = tile_col + c;
            if (row < rows && col < cols) {
                float4 value = *reinterpret_cast<const float4*>(input + row * cols + col);
                tile[r * pitch + c] = value.x;
                tile[r * pitch + c + 1] = value.y;
                tile[r * pitch + c + 2] = value.z;
                tile[r * pitch + c + 3] = value.w;
            }
        }
        __syncthreads();
#pragma unroll
        for (unsigned pass = 0; pass < T * per_row / THREADS; ++pass) {
            unsigned i = t + pass * THREADS;
            unsigned c = i / per_row, r = 4 * (i % per_row);
            unsigned row = tile_row + r, col = tile_col + c;
            if (row < rows && col < cols) {
                float4 value = make_float4(tile[r * pitch + c], tile[(r + 1) * pitch + c], tile[(r + 2) * pitch + c],
                                           tile[(r + 3) * pitch + c]);
                *reinterpret_cast<float4*>(output + col * rows + row) = value;
            }
        }
    } else {
#pragma unroll
        for (unsigned pass = 0; pass < T * T / THREADS; ++pass) {
            unsigned i = t + pass * THREADS;
            unsigned r = i / T, c = i % T;
            unsigned row = tile_row + r, col = tile_col + c;
            if (row < rows && col < cols) tile[r * pitch + c] = input[row * cols + col];
        }
        __syncthreads();
#pragma unroll
        for (unsigned pass = 0; pass < T * T / THREADS; ++pass) {
            unsigned i = t + pass * THREADS;
            unsigned c = i / T, r = i % T;
            unsigned row = tile_row + r, col = tile_col + c;
            if (row < rows && col < cols) output[col * rows + row] = tile[r * pitch + c];
        }
    }
}
