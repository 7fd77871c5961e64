// Attention's backward, the wgmma pass's first launch after a forward that saved each row's lse
// (kernels::attention::backward::delta): each query row's Δ = Σ dO·O (after every row's lse in
// stats) and its f32 sums of dQ zeroed (from the first multiple of four floats after every row's
// lse and Δ). A row is 16 lanes, each reading 8 columns of O and dO (16 bytes each) and zeroing
// its 8 sums; 16 rows a block, a row of blocks per head (y); any head dimension that is a
// multiple of 8 up to 128.
#define THREADS 256
#define CHUNK 8
#define LANES (128 / CHUNK)
#define ROWS (THREADS / LANES)

typedef unsigned short bf16;

__device__ __forceinline__ float low_of(unsigned pair) { return __uint_as_float(pair << 16); }
__device__ __forceinline__ float high_of(unsigned pair) { return __uint_as_float(pair & 0xffff0000u); }

extern "C" __global__ void __launch_bounds__(THREADS, 4)
    attention_backward_delta_cuda(const bf16* q, const bf16* k, const bf16* v, const bf16* o, const bf16* d_o,
                                  bf16* dq, bf16* dk, bf16* dv, float* stats, unsigned kv_group, unsigned seq,
                                  unsigned dim) {
    unsigned heads = gridDim.y;
    unsigned position = blockIdx.x * ROWS + threadIdx.x / LANES, chunk = threadIdx.x % LANES;
    unsigned row = blockIdx.y * seq + position;
    float sum = 0.f;
    if (position < seq && chunk * CHUNK < dim) {
        size_t at = (size_t)row * dim + chunk * CHUNK;
        uint4 a = *(const uint4*)(o + at), b = *(const uint4*)(d_o + at);
        unsigned as[4] = {a.x, a.y, a.z, a.w}, bs[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) sum += low_of(as[i]) * low_of(bs[i]) + high_of(as[i]) * high_of(bs[i]);
        size_t sums = ((2 * (size_t)heads * seq + 3) / 4) * 4;
        float4* out = (float4*)(stats + sums + at);
        out[0] = make_float4(0.f, 0.f, 0.f, 0.f);
        out[1] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
    sum += __shfl_xor_sync(0xffffffff, sum, 8);
    sum += __shfl_xor_sync(0xffffffff, sum, 4);
    sum += __shfl_xor_sync(0xffffffff, sum, 2);
    sum += __shfl_xor_sync(0xffffffff, sum, 1);
    if (chunk == 0 && position < seq) stats[(size_t)heads * seq + row] = sum;
}
