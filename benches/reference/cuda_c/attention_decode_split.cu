// Decoding attention's first pass (kernels::attention::decode), every key and causal: see
// attention_decode.cuh.
#include "attention_decode.cuh"

#define ENTRY(name, causal)                                                                                   \
    extern "C" __global__ void __launch_bounds__(THREADS, 1)                                                  \
        name(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* partial, unsigned kv_heads,        \
             unsigned rows, unsigned queries, unsigned keys, unsigned dim, unsigned chunk, unsigned splits) { \
        Decode p = {kv_heads, rows, queries, keys, dim, chunk, splits};                                       \
        if (dim == 64)                                                                                        \
            attention_decode_split<64, causal>(q, k, v, o, partial, {kv_heads, rows, queries, keys, 64, chunk, splits}); \
        else if (dim == 128)                                                                                  \
            attention_decode_split<128, causal>(q, k, v, o, partial, {kv_heads, rows, queries, keys, 128, chunk, splits}); \
        else if (dim < 64)                                                                                    \
            attention_decode_split<64, causal>(q, k, v, o, partial, p);                                       \
        else                                                                                                  \
            attention_decode_split<128, causal>(q, k, v, o, partial, p);                                      \
    }

ENTRY(attention_decode_split_cuda, false)
ENTRY(attention_decode_split_causal_cuda, true)
