// The element types of the row kernels (kernels::element): f32, and bf16 kept as its bits.
#pragma once

// kernels::element::RowElement: widening, rounding, and 16-byte vectors of 4 f32 or 8 bf16.
template <class E>
struct Element;

template <>
struct Element<float> {
    static constexpr unsigned LANES = 4;
    __device__ static float to_f32(float x) { return x; }
    __device__ static float from_f32(float x) { return x; }
    __device__ static void load(const float* p, float* out) {
        float4 v = *reinterpret_cast<const float4*>(p);
        out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
    }
    __device__ static void store(float* p, const float* v) { *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]); }
};

template <>
struct Element<unsigned short> {
    static constexpr unsigned LANES = 8;
    __device__ static float to_f32(unsigned short x) { return __uint_as_float((unsigned)x << 16); }
    // Nearest, ties to even: one cvt.rn.bf16.f32 (kernels::device's round_pack_bf16x2 per element).
    __device__ static unsigned short from_f32(float x) {
        unsigned short r;
        asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(x));
        return r;
    }
    __device__ static void load(const unsigned short* p, float* out) {
        uint4 v = *reinterpret_cast<const uint4*>(p);
        unsigned words[4] = {v.x, v.y, v.z, v.w};
        for (unsigned w = 0; w < 4; ++w) {
            out[2 * w] = __uint_as_float(words[w] << 16);
            out[2 * w + 1] = __uint_as_float(words[w] & 0xffff0000u);
        }
    }
    __device__ static void store(unsigned short* p, const float* v) {
        unsigned words[4];
        for (unsigned w = 0; w < 4; ++w)
            words[w] = (unsigned)from_f32(v[2 * w]) | ((unsigned)from_f32(v[2 * w + 1]) << 16);
        *reinterpret_cast<uint4*>(p) = make_uint4(words[0], words[1], words[2], words[3]);
    }
};

// kernels::element::RowElement::widen: a 16-byte vector's bits (as loaded or staged) as its LANES
// values; map_raw: the bits of the vector of f(k, value k), each rounded to E.
template <class E>
__device__ __forceinline__ void widen(float4 raw, float* out) {
    if (Element<E>::LANES == 4) {
        out[0] = raw.x, out[1] = raw.y, out[2] = raw.z, out[3] = raw.w;
    } else {
        unsigned words[4] = {__float_as_uint(raw.x), __float_as_uint(raw.y), __float_as_uint(raw.z), __float_as_uint(raw.w)};
        for (unsigned w = 0; w < 4; ++w) {
            out[2 * w] = __uint_as_float(words[w] << 16);
            out[2 * w + 1] = __uint_as_float(words[w] & 0xffff0000u);
        }
    }
}

template <class E, typename F>
__device__ __forceinline__ float4 map_raw(float4 raw, F f) {
    float x[8];
    widen<E>(raw, x);
#pragma unroll
    for (unsigned k = 0; k < Element<E>::LANES; ++k) x[k] = f(k, x[k]);
    float4 out;
    Element<E>::store(reinterpret_cast<E*>(&out), x);
    return out;
}

