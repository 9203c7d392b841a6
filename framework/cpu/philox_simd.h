// philox_simd.h — the vector paths of philox.cpp, one per width (private to
// framework/cpu). Each fills whole chunks of the stream: chunk c is positions
// 32c .. 32c + 31 (8 Philox blocks), so every number is computed by the same
// lane arithmetic wherever a fill starts or stops. Both widths run one body
// (philox_lanes.h) and give bitwise the same numbers.
//
//   fill_avx2(y, seed, c0, c1, Uniform{lo, hi - lo});     // chunks [c0, c1) into y
//   fill_avx512(y, seed, c0, c1, Normal{mean, sd});       // c0 and c1 even
#pragma once
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#define AMLP_PHILOX_X86 1
#else
#define AMLP_PHILOX_X86 0
#endif

namespace amlp::philox {

constexpr uint64_t kChunk = 32;  // numbers per chunk: 8 blocks of 4

// y = lo + w * uniform
struct Uniform {
  float lo, w;
};
// y = mean + sd * normal
struct Normal {
  float mean, sd;
};

#if AMLP_PHILOX_X86
// 8 lanes: AVX2 + FMA (philox_avx2.cpp).
void fill_avx2(float* y, uint64_t seed, uint64_t c0, uint64_t c1, Uniform p);
void fill_avx2(float* y, uint64_t seed, uint64_t c0, uint64_t c1, Normal p);
// 16 lanes: AVX-512F (philox_avx512.cpp); two chunks at a time, so c0 and c1 are even.
void fill_avx512(float* y, uint64_t seed, uint64_t c0, uint64_t c1, Uniform p);
void fill_avx512(float* y, uint64_t seed, uint64_t c0, uint64_t c1, Normal p);
#endif

}  // namespace amlp::philox
