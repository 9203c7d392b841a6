// philox.h — Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy
// as 1, 2, 3", SC'11) laid out as cuRAND's PHILOX4_32_10 generator lays it out,
// so the CPU backend draws the numbers cuRAND draws (host or device) from one
// (seed, offset).
//
// cuRAND's stream (curandGenerate*, default ordering), checked against its
// host generator (tests/cpu/test_philox.cpp): number q of the stream is word
// q % 4 of the block b = q / 4, and block b is Philox4x32-10 of
//   counter = (lo32(b >> 16), hi32(b >> 16), b & 0xffff, 0),  key = seed
// (65536 "threads" each own a subsequence, ctr.z; ctr.x counts their steps).
// Setting the offset to o makes the first number drawn number o.
//   uniform(q) = float(w_q) * 2^-32 + 2^-33                   in (0, 1]
//   normal(q)  = Box–Muller of the pair (w_p, w_p+1), p = q & ~1:
//                s = sqrt(-2 ln u(w_p)), t = float(w_p+1) * (2^-32·2π) + half that,
//                normal(p) = s·sin t, normal(p+1) = s·cos t   (curand_normal.h, _curand_box_muller)
// so every number is a function of its position alone, and any range of the
// stream can be filled on its own: split a draw at any point, same numbers.
//
// The fill functions run vectorised (AVX-512, else AVX2+FMA, chosen at run
// time: one body over the vector width, philox_lanes.h, so the two give
// bitwise the same numbers), else a scalar fallback. Uniforms are bitwise
// cuRAND's on every path; normals are bitwise on the scalar path (libm's
// sinf/cosf/logf, as cuRAND's host generator) and within a few ulp of it on
// the vector path (its own sin, cos and log, ≤ ~1e-6·stddev apart; the
// tests' bound is 1e-5·stddev + 2 ulp).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace amlp::philox {

struct Block {
  uint32_t v[4];
};

constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;  // round multipliers
constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;  // key schedule (Weyl)
constexpr float k2Pow32Inv = 2.3283064e-10f;             // CURAND_2POW32_INV = 2^-32
constexpr float k2Pow32Inv2Pi = 2.3283064e-10f * 6.2831855f;  // CURAND_2POW32_INV_2PI

inline Block philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint64_t key) {
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = uint64_t(kM0) * c0, p1 = uint64_t(kM1) * c2;
    const uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0, n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c1 = uint32_t(p1);
    c3 = uint32_t(p0);
    c0 = n0;
    c2 = n2;
    k0 += kW0;
    k1 += kW1;
  }
  return {{c0, c1, c2, c3}};
}

// Block b of the stream of `seed`, in cuRAND's counter layout.
inline Block block(uint64_t seed, uint64_t b) {
  const uint64_t step = b >> 16;
  return philox4x32_10(uint32_t(step), uint32_t(step >> 32), uint32_t(b & 0xffff), 0, seed);
}

// Word q of the stream.
inline uint32_t bits(uint64_t seed, uint64_t q) { return block(seed, q / 4).v[q % 4]; }

// u in (0, 1], as cuRAND maps 32-bit integers (the product is exact).
inline float to_uniform(uint32_t x) { return float(x) * k2Pow32Inv + k2Pow32Inv / 2; }

// Box–Muller as cuRAND's host code: (s·sin t, s·cos t).
inline void box_muller(uint32_t x, uint32_t y, float* out2) {
  const float u = float(x) * k2Pow32Inv + k2Pow32Inv / 2;
  const float t = float(y) * k2Pow32Inv2Pi + k2Pow32Inv2Pi / 2;
  const float s = std::sqrt(-2.0f * std::log(u));
  out2[0] = std::sin(t) * s;
  out2[1] = std::cos(t) * s;
}

// Which code the fill functions run.
enum class Isa { Scalar, Avx2, Avx512 };  // in order: each CPU with one has the ones before
Isa best_isa();  // the fastest this CPU runs, found once
const char* isa_name(Isa isa);

// y[i] = lo + (hi - lo) * uniform(begin + i), i < end - begin.
void fill_uniform(float* y, uint64_t seed, uint64_t begin, uint64_t end, float lo, float hi, Isa isa = best_isa());
// y[i] = mean + stddev * normal(begin + i), i < end - begin.
void fill_normal(float* y, uint64_t seed, uint64_t begin, uint64_t end, float mean, float stddev,
                 Isa isa = best_isa());

}  // namespace amlp::philox
