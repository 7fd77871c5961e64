// Attention over the keys up to each query on mma.sync at any head dimension that is a multiple of 8 up to 128
// (kernels::attention::flash, the any-dimension entries): see attention_flash.cuh.
#include "attention_flash.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 2)
    attention_causal_flash_any_dim_cuda(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse, unsigned kv_group, unsigned seq,
                unsigned dim, const void* maps /* the TMA rungs'; unused here */) {
    if (dim <= 64)
        attention_flash<64, true>(q, k, v, o, lse, seq, kv_group, dim);
    else
        attention_flash<128, true>(q, k, v, o, lse, seq, kv_group, dim);
}
