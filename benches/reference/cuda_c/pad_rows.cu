// The row-padded copy (kernels::matmul::pad_rows): a dense rows × cols matrix of `bytes`-byte
// elements (2: bf16, 4: f32) into rows 16-byte aligned, one thread per 16-byte chunk of the copy,
// its elements read one by one (consecutive lanes, consecutive elements), zeros in the padding.
template <unsigned BYTES, typename E>
__device__ __forceinline__ void pad(const E* src, unsigned* dst, unsigned rows, unsigned cols) {
    const unsigned per_chunk = 16 / BYTES;
    unsigned pitch = (cols + per_chunk - 1) / per_chunk * per_chunk, chunks = pitch / per_chunk;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x, row = i / chunks, first = i % chunks * per_chunk;
    if (row >= rows) return;
    auto at = [&](unsigned c) -> unsigned { return c < cols ? (unsigned)src[row * cols + c] : 0u; };
    uint4 words;
    if (BYTES == 2) {
        words = make_uint4(at(first) | at(first + 1) << 16, at(first + 2) | at(first + 3) << 16,
                           at(first + 4) | at(first + 5) << 16, at(first + 6) | at(first + 7) << 16);
    } else {
        words = make_uint4(at(first), at(first + 1), at(first + 2), at(first + 3));
    }
    *(uint4*)(dst + (row * pitch + first) * BYTES / 4) = words;
}

extern "C" __global__ void pad_rows_cuda(const unsigned char* src, unsigned* dst, unsigned rows, unsigned cols,
                                         unsigned bytes) {
    if (bytes == 2)
        pad<2>((const unsigned short*)src, dst, rows, cols);
    else
        pad<4>((const unsigned*)src, dst, rows, cols);
}
