// Flash-decoding's second pass (kernels::attention::combine): see attention_decode.cuh.
#include "attention_decode.cuh"

extern "C" __global__ void __launch_bounds__(256, 4)
    attention_decode_combine_cuda(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* partial,
                                  unsigned kv_heads, unsigned rows, unsigned queries, unsigned keys, unsigned dim,
                                  unsigned chunk, unsigned splits) {
    Decode p = {kv_heads, rows, queries, keys, dim, chunk, splits};
    // At 64 and 128 the dimension a constant, as the Rust entry has it.
    if (dim == 64)
        attention_decode_combine<64>(partial, o, {kv_heads, rows, queries, keys, 64, chunk, splits});
    else if (dim == 128)
        attention_decode_combine<128>(partial, o, {kv_heads, rows, queries, keys, 128, chunk, splits});
    else if (dim < 64)
        attention_decode_combine<64>(partial, o, p);
    else
        attention_decode_combine<128>(partial, o, p);
}
