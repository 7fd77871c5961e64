// Attention's backward pass, both launches, every key and causal (kernels::attention::backward):
// see attention_backward.cuh.
#include "attention_backward.cuh"

#define ENTRIES(query_name, keys_name, causal)                                                                   \
    extern "C" __global__ void __launch_bounds__(THREADS, 1)                                                     \
        query_name(const bf16* q, const bf16* k, const bf16* v, const bf16* o, const bf16* d_o, bf16* dq,       \
                   bf16* dk, bf16* dv, float* stats, unsigned kv_group, unsigned seq, unsigned dim) {             \
        if (dim == 64) attention_backward_query<64, causal>(q, k, v, o, d_o, dq, stats, kv_group, seq, 64); \
        else if (dim == 128) attention_backward_query<128, causal>(q, k, v, o, d_o, dq, stats, kv_group, seq, 128); \
        else if (dim < 64) attention_backward_query<64, causal>(q, k, v, o, d_o, dq, stats, kv_group, seq, dim); \
        else attention_backward_query<128, causal>(q, k, v, o, d_o, dq, stats, kv_group, seq, dim); \
    }                                                                                                            \
    extern "C" __global__ void __launch_bounds__(THREADS, 1)                                                     \
        keys_name(const bf16* q, const bf16* k, const bf16* v, const bf16* o, const bf16* d_o, bf16* dq,        \
                  bf16* dk, bf16* dv, float* stats, unsigned kv_group, unsigned seq, unsigned dim) {              \
        if (dim == 64) attention_backward_keys<64, causal>(q, k, v, d_o, dk, dv, stats, kv_group, seq, 64); \
        else if (dim == 128) attention_backward_keys<128, causal>(q, k, v, d_o, dk, dv, stats, kv_group, seq, 128); \
        else if (dim < 64) attention_backward_keys<64, causal>(q, k, v, d_o, dk, dv, stats, kv_group, seq, dim); \
        else attention_backward_keys<128, causal>(q, k, v, d_o, dk, dv, stats, kv_group, seq, dim); \
    }

ENTRIES(attention_backward_query_cuda, attention_backward_keys_cuda, false)
ENTRIES(attention_backward_query_causal_cuda, attention_backward_keys_causal_cuda, true)

// The first launch after a forward that saved each row's lse in stats (no first pass).
#define SAVED_ENTRY(name, causal)                                                                                  \
    extern "C" __global__ void __launch_bounds__(THREADS, 1)                                                     \
        name(const bf16* q, const bf16* k, const bf16* v, const bf16* o, const bf16* d_o, bf16* dq, bf16* dk,   \
             bf16* dv, float* stats, unsigned kv_group, unsigned seq, unsigned dim) {                            \
        if (dim == 64) attention_backward_query<64, causal, true>(q, k, v, o, d_o, dq, stats, kv_group, seq, 64); \
        else if (dim == 128)                                                                                     \
            attention_backward_query<128, causal, true>(q, k, v, o, d_o, dq, stats, kv_group, seq, 128);         \
        else if (dim < 64) attention_backward_query<64, causal, true>(q, k, v, o, d_o, dq, stats, kv_group, seq, dim); \
        else attention_backward_query<128, causal, true>(q, k, v, o, d_o, dq, stats, kv_group, seq, dim);        \
    }

SAVED_ENTRY(attention_backward_query_saved_cuda, false)
SAVED_ENTRY(attention_backward_query_saved_causal_cuda, true)
