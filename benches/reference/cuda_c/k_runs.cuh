// kernels::matmul::k_runs: block z's run of k, and the runs' sums meeting in C without zeroing it:
// run 0 stores and signals its tile's counter in `arrivals`, the other runs wait for the signal and
// add theirs with red.global.add.f32 (what the Rust kernels' `red_add` emits; atomicAdd became
// ATOMG here, each waiting for its old value: docs/perf-log.md, change 95), and the last resets
// the counter. Shared by matmul_split_k.cu and matmul_small_m.cuh.
#pragma once

struct KRun {
    unsigned begin, end, runs;
};

// gridDim.z equal runs, multiples of STEP, the last one short; empty past k.
template <unsigned STEP>
__device__ __forceinline__ KRun run_of_k(unsigned k) {
    unsigned chunk = ((k + gridDim.z - 1) / gridDim.z + STEP - 1) / STEP * STEP;
    unsigned long long begin_wide = (unsigned long long)blockIdx.z * chunk;
    unsigned begin = begin_wide < k ? (unsigned)begin_wide : k;
    unsigned end = begin + chunk < begin || begin + chunk > k ? k : begin + chunk;
    return {begin, end, (k + chunk - 1) / chunk};
}

__device__ __forceinline__ void red_add(float* at, float value) {
    asm volatile("red.global.add.f32 [%0], %1;" ::"l"(at), "f"(value) : "memory");
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Four at once (16-byte aligned): red.global.add.v4.f32, sm_90 and PTX ISA 8.1 on.
__device__ __forceinline__ void red_add4(float* at, float4 value) {
    asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(at), "f"(value.x), "f"(value.y),
                 "f"(value.z), "f"(value.w)
                 : "memory");
}
#endif

// Called by every thread of the block: `store` writes its sums into C, `add` adds them with red_add.
template <class Store, class Add>
__device__ __forceinline__ void meet_in_c(unsigned* arrivals, unsigned runs, Store store, Add add) {
    if (runs == 1) {
        store();
        return;
    }
    unsigned* arrived = arrivals + blockIdx.y * gridDim.x + blockIdx.x;
    if (blockIdx.z == 0) {
        store();
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0) atomicAdd(arrived, 1u);
        return;
    }
    if (threadIdx.x == 0) {
        unsigned seen;
        do asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(arrived) : "memory");
        while (seen == 0);
    }
    __syncthreads();
    add();
    if (threadIdx.x == 0 && atomicAdd(arrived, 1u) == runs - 1)
        asm volatile("st.relaxed.gpu.global.u32 [%0], 0;" ::"l"(arrived) : "memory");
}

// As meet_in_c for one warp's part of a tile on a persistent grid (kernels::matmul::k_runs::
// meet_in_c_warp): the part's runs share the counter `arrived`; `write(adding)` stores the warp's
// sums or, where adding, adds them, called once.
template <class Write>
__device__ __forceinline__ void meet_in_c_warp(unsigned* arrived, unsigned run, unsigned runs, Write write) {
    bool adding = run > 0, first = threadIdx.x % 32 == 0;
    if (adding) {
        if (first) {
            unsigned seen;
            do asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(arrived) : "memory");
            while (seen == 0);
        }
        __syncwarp();
    }
    write(adding);
    if (runs == 1) return;
    if (!adding) {
        __threadfence();
        __syncwarp();
        if (first) atomicAdd(arrived, 1u);
    } else if (first && atomicAdd(arrived, 1u) == runs - 1) {
        asm volatile("st.relaxed.gpu.global.u32 [%0], 0;" ::"l"(arrived) : "memory");
    }
}
