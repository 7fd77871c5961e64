// CUB's device-wide primitives behind extern "C" functions, so that the Rust host can time them
// beside its own kernels (host/src/gpu/cub.rs). Built on the GPU runner by run.sh:
//   nvcc -O3 -arch=sm_XX -shared -Xcompiler -fPIC anchors.cu -o libcub_anchors.so
// Each returns the cudaError_t of its call (0: success).
#include <cub/cub.cuh>
#include <cstdint>

extern "C" int cub_reduce_sum_temp_bytes(int64_t n, size_t* bytes) {
    *bytes = 0;
    return (int)cub::DeviceReduce::Sum(nullptr, *bytes, (const float*)nullptr, (float*)nullptr, n);
}

extern "C" int cub_reduce_sum(const float* input, float* output, int64_t n, void* temp, size_t temp_bytes,
                              cudaStream_t stream) {
    return (int)cub::DeviceReduce::Sum(temp, temp_bytes, input, output, n, stream);
}

// 256 bins over bytes: levels 0, 1, …, 256, so that bin b counts the value b.
extern "C" int cub_histogram_u8_temp_bytes(int64_t n, size_t* bytes) {
    *bytes = 0;
    return (int)cub::DeviceHistogram::HistogramEven(nullptr, *bytes, (const unsigned char*)nullptr,
                                                     (unsigned int*)nullptr, 257, 0, 256, n);
}

extern "C" int cub_histogram_u8(const unsigned char* input, unsigned int* bins, int64_t n, void* temp,
                                size_t temp_bytes, cudaStream_t stream) {
    return (int)cub::DeviceHistogram::HistogramEven(temp, temp_bytes, input, bins, 257, 0, 256, n, stream);
}

// 256 bins over f32 samples in [-1, 1) (the demo's range: host::families::histogram_f32::RANGE).
extern "C" int cub_histogram_f32_temp_bytes(int64_t n, size_t* bytes) {
    *bytes = 0;
    return (int)cub::DeviceHistogram::HistogramEven(nullptr, *bytes, (const float*)nullptr, (unsigned int*)nullptr,
                                                     257, -1.0f, 1.0f, n);
}

extern "C" int cub_histogram_f32(const float* input, unsigned int* bins, int64_t n, void* temp, size_t temp_bytes,
                                 cudaStream_t stream) {
    return (int)cub::DeviceHistogram::HistogramEven(temp, temp_bytes, input, bins, 257, -1.0f, 1.0f, n, stream);
}

extern "C" int cub_inclusive_sum_temp_bytes(int64_t n, size_t* bytes) {
    *bytes = 0;
    return (int)cub::DeviceScan::InclusiveSum(nullptr, *bytes, (const float*)nullptr, (float*)nullptr, n);
}

extern "C" int cub_inclusive_sum(const float* input, float* output, int64_t n, void* temp, size_t temp_bytes,
                                 cudaStream_t stream) {
    return (int)cub::DeviceScan::InclusiveSum(temp, temp_bytes, input, output, n, stream);
}

extern "C" int cub_exclusive_sum_temp_bytes(int64_t n, size_t* bytes) {
    *bytes = 0;
    return (int)cub::DeviceScan::ExclusiveSum(nullptr, *bytes, (const float*)nullptr, (float*)nullptr, n);
}

extern "C" int cub_exclusive_sum(const float* input, float* output, int64_t n, void* temp, size_t temp_bytes,
                                 cudaStream_t stream) {
    return (int)cub::DeviceScan::ExclusiveSum(temp, temp_bytes, input, output, n, stream);
}

extern "C" int cub_reduce_max_temp_bytes(int64_t n, size_t* bytes) {
    *bytes = 0;
    return (int)cub::DeviceReduce::Max(nullptr, *bytes, (const float*)nullptr, (float*)nullptr, n);
}

extern "C" int cub_reduce_max(const float* input, float* output, int64_t n, void* temp, size_t temp_bytes,
                              cudaStream_t stream) {
    return (int)cub::DeviceReduce::Max(temp, temp_bytes, input, output, n, stream);
}

// Prefix sums of i32 as u32: the same bits, and wrapping past 2^32 is defined for unsigned integers.
extern "C" int cub_inclusive_sum_i32_temp_bytes(int64_t n, size_t* bytes) {
    *bytes = 0;
    return (int)cub::DeviceScan::InclusiveSum(nullptr, *bytes, (const unsigned*)nullptr, (unsigned*)nullptr, n);
}

extern "C" int cub_inclusive_sum_i32(const unsigned* input, unsigned* output, int64_t n, void* temp, size_t temp_bytes,
                                     cudaStream_t stream) {
    return (int)cub::DeviceScan::InclusiveSum(temp, temp_bytes, input, output, n, stream);
}

extern "C" int cub_exclusive_sum_i32_temp_bytes(int64_t n, size_t* bytes) {
    *bytes = 0;
    return (int)cub::DeviceScan::ExclusiveSum(nullptr, *bytes, (const unsigned*)nullptr, (unsigned*)nullptr, n);
}

extern "C" int cub_exclusive_sum_i32(const unsigned* input, unsigned* output, int64_t n, void* temp, size_t temp_bytes,
                                     cudaStream_t stream) {
    return (int)cub::DeviceScan::ExclusiveSum(temp, temp_bytes, input, output, n, stream);
}
