// philox.h — Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy
// as 1, 2, 3", SC'11), the generator cuRAND calls PHILOX4_32_10.
//
// Used by the CPU backend only when the build has no cuRAND (no CUDA Toolkit).
// Same generator family and distributions, but the numbers are not cuRAND's
// (cuRAND orders its output streams its own way): with the toolkit, both
// backends use cuRAND and draw identical streams.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace amlp::philox {

struct Block {
  uint32_t v[4];
};

inline Block round10(uint64_t counter, uint64_t key) {
  uint32_t c0 = uint32_t(counter), c1 = uint32_t(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = uint64_t(0xD2511F53u) * c0, p1 = uint64_t(0xCD9E8D57u) * c2;
    const uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0, n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c1 = uint32_t(p1);
    c3 = uint32_t(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

// u in (0, 1], as cuRAND maps 32-bit integers.
inline float to_uniform(uint32_t x) { return x * 2.3283064e-10f + 1.1641532e-10f; }

// Number i of the stream at (seed, offset).
inline uint32_t bits(uint64_t seed, uint64_t offset, size_t i) {
  const uint64_t n = offset + i;
  return round10(n / 4, seed).v[n % 4];
}

inline void uniform(float* y, size_t n, uint64_t seed, uint64_t offset) {
  for (size_t i = 0; i < n; ++i) y[i] = to_uniform(bits(seed, offset, i));
}

// Box–Muller on consecutive pairs.
inline void normal(float* y, size_t n, uint64_t seed, uint64_t offset, float mean, float sd) {
  for (size_t i = 0; i < n; i += 2) {
    const float u1 = to_uniform(bits(seed, offset, i)), u2 = to_uniform(bits(seed, offset, i + 1));
    const float r = std::sqrt(-2.f * std::log(u1)), t = 6.2831853f * u2;
    y[i] = mean + sd * r * std::cos(t);
    if (i + 1 < n) y[i + 1] = mean + sd * r * std::sin(t);
  }
}

}  // namespace amlp::philox
