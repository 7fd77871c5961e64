// kernels::scan::look_back: the single pass, thread 0 walking back one tile at a time.
#include "look_back.cuh"
struct OneThread {
    static __device__ __forceinline__ float prefix(unsigned long long* statuses, unsigned tile, float aggregate,
                                                   unsigned lane) {
        if (lane != 0) return 0.0f;
        if (tile == 0) {
            publish(statuses, status(INCLUSIVE, aggregate));
            return 0.0f;
        }
        publish(statuses + tile, status(AGGREGATE, aggregate));
        float before = 0.0f;
        for (unsigned j = tile - 1;; --j) {
            unsigned long long word;
            do word = peek(statuses + j); while ((word >> 32) == 0);
            before += __uint_as_float((unsigned)word);
            if ((word >> 32) == INCLUSIVE) break;
        }
        publish(statuses + tile, status(INCLUSIVE, before + aggregate));
        return before;
    }
};
extern "C" __global__ void scan_look_back_cuda(const float* input, float* output, float* scratch, unsigned n,
                                               unsigned exclusive, unsigned phase) {
    look_back_body<OneThread>(input, output, scratch, n, exclusive, phase);
}
