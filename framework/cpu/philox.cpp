// philox.cpp — the stream of philox.h, filled 32 numbers (8 blocks) at a time:
// AVX2 lanes run 8 consecutive blocks through the 10 rounds, then Box–Muller
// or the uniform map, then a 4×8 transpose into stream order. The scalar
// fallback computes the same positions one block at a time with libm.
//
// Chunks are aligned to the stream (positions 32k .. 32k+31), so every
// number is computed by the same lane arithmetic wherever a fill starts or
// stops: a partial chunk at either end is made whole in a scratch buffer.
#include "framework/cpu/philox.h"

#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
// GCC 12 flags _mm512_undefined_*'s self-initialisation inside the AVX-512
// intrinsics as uninitialised (GCC bug 105593): not our code, no real read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
#define AMLP_PHILOX_X86 1
#else
#define AMLP_PHILOX_X86 0
#endif

namespace amlp::philox {

namespace {

constexpr uint64_t kChunk = 32;  // numbers per chunk: 8 blocks of 4

struct Uniform {
  float lo, w;
};
struct Normal {
  float mean, sd;
};

// --- scalar ---------------------------------------------------------------------

void chunk_scalar(float* out, uint64_t seed, uint64_t first_block, Uniform p) {
  for (int k = 0; k < 8; ++k) {
    const Block b = block(seed, first_block + k);
    for (int j = 0; j < 4; ++j) out[4 * k + j] = p.lo + p.w * to_uniform(b.v[j]);
  }
}

void chunk_scalar(float* out, uint64_t seed, uint64_t first_block, Normal p) {
  for (int k = 0; k < 8; ++k) {
    const Block b = block(seed, first_block + k);
    float z[4];
    box_muller(b.v[0], b.v[1], z);
    box_muller(b.v[2], b.v[3], z + 2);
    for (int j = 0; j < 4; ++j) out[4 * k + j] = p.mean + p.sd * z[j];
  }
}

// --- AVX2 + FMA -----------------------------------------------------------------

#if AMLP_PHILOX_X86

#define AMLP_AVX2 __attribute__((target("avx2,fma")))

// 32×32 → 64-bit products of every lane of c with m: (high halves, low halves).
AMLP_AVX2 inline void mulhilo(__m256i c, __m256i m, __m256i* hi, __m256i* lo) {
  const __m256i e = _mm256_mul_epu32(c, m), o = _mm256_mul_epu32(_mm256_srli_epi64(c, 32), m);  // even, odd lanes
  *hi = _mm256_blend_epi32(_mm256_srli_epi64(e, 32), o, 0xAA);
  *lo = _mm256_blend_epi32(e, _mm256_slli_epi64(o, 32), 0xAA);
}

// N groups of 8 blocks, group g = blocks b0 + 8g .. b0 + 8g + 7 (b0 % 8 == 0, so
// one 65536-block step holds a group): x[g][j] lane k = word j of block b0 + 8g + k.
// Groups interleave round by round: independent chains for the multipliers.
template <int N>
AMLP_AVX2 inline void philox8(uint64_t seed, uint64_t b0, __m256i (*x)[4]) {
  __m256i c0[N], c1[N], c2[N], c3[N];
  for (int g = 0; g < N; ++g) {
    const uint64_t b = b0 + 8 * uint64_t(g), step = b >> 16;
    c0[g] = _mm256_set1_epi32(int(uint32_t(step)));
    c1[g] = _mm256_set1_epi32(int(uint32_t(step >> 32)));
    c2[g] = _mm256_add_epi32(_mm256_set1_epi32(int(uint32_t(b & 0xffff))), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    c3[g] = _mm256_setzero_si256();
  }
  const __m256i m0 = _mm256_set1_epi32(int(kM0)), m1 = _mm256_set1_epi32(int(kM1));
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    const __m256i key0 = _mm256_set1_epi32(int(k0)), key1 = _mm256_set1_epi32(int(k1));
    for (int g = 0; g < N; ++g) {
      __m256i hi0, lo0, hi1, lo1;
      mulhilo(c0[g], m0, &hi0, &lo0);
      mulhilo(c2[g], m1, &hi1, &lo1);
      c0[g] = _mm256_xor_si256(_mm256_xor_si256(hi1, c1[g]), key0);
      c2[g] = _mm256_xor_si256(_mm256_xor_si256(hi0, c3[g]), key1);
      c1[g] = lo1;
      c3[g] = lo0;
    }
    k0 += kW0;
    k1 += kW1;
  }
  for (int g = 0; g < N; ++g) {
    x[g][0] = c0[g];
    x[g][1] = c1[g];
    x[g][2] = c2[g];
    x[g][3] = c3[g];
  }
}

// Lane k of v[j] → out[4k + j]: blocks back into stream order.
AMLP_AVX2 inline void store_transposed(float* out, const __m256 v[4]) {
  const __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
  const __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
  const __m256 u0 = _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(t0), _mm256_castps_pd(t2)));  // blocks 0 | 4
  const __m256 u1 = _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(t0), _mm256_castps_pd(t2)));  // 1 | 5
  const __m256 u2 = _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(t1), _mm256_castps_pd(t3)));  // 2 | 6
  const __m256 u3 = _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(t1), _mm256_castps_pd(t3)));  // 3 | 7
  _mm256_storeu_ps(out, _mm256_permute2f128_ps(u0, u1, 0x20));
  _mm256_storeu_ps(out + 8, _mm256_permute2f128_ps(u2, u3, 0x20));
  _mm256_storeu_ps(out + 16, _mm256_permute2f128_ps(u0, u1, 0x31));
  _mm256_storeu_ps(out + 24, _mm256_permute2f128_ps(u2, u3, 0x31));
}

// float(x) for unsigned x, correctly rounded: both halves convert exactly,
// hi·65536 is exact, so the one add rounds once (AVX2 has no unsigned convert).
AMLP_AVX2 inline __m256 u32_to_float(__m256i x) {
  const __m256 hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(x, 16));
  const __m256 lo = _mm256_cvtepi32_ps(_mm256_and_si256(x, _mm256_set1_epi32(0xffff)));
  return _mm256_fmadd_ps(hi, _mm256_set1_ps(65536.f), lo);
}

// a * c + d with the product exact (c a power of two): FMA or not, one rounding.
AMLP_AVX2 inline __m256 scaled(__m256i x, float c, float d) {
  return _mm256_add_ps(_mm256_mul_ps(u32_to_float(x), _mm256_set1_ps(c)), _mm256_set1_ps(d));
}

// ln x for x in [2^-33, 1] (Cephes logf: x = m·2^e, m in [√½, √2), a degree-8
// polynomial in m - 1; ≤ ~2 ulp). ln 1 = 0 exactly.
AMLP_AVX2 inline __m256 log_ps(__m256 x) {
  const __m256i xi = _mm256_castps_si256(x);
  __m256 e = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(xi, 23), _mm256_set1_epi32(126)));
  __m256 m = _mm256_castsi256_ps(
      _mm256_or_si256(_mm256_and_si256(xi, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x3f000000)));  // [½, 1)
  const __m256 small = _mm256_cmp_ps(m, _mm256_set1_ps(0.707106781186547524f), _CMP_LT_OQ);
  e = _mm256_sub_ps(e, _mm256_and_ps(small, _mm256_set1_ps(1.f)));
  m = _mm256_sub_ps(_mm256_add_ps(m, _mm256_and_ps(small, m)), _mm256_set1_ps(1.f));
  const __m256 z = _mm256_mul_ps(m, m);
  __m256 y = _mm256_set1_ps(7.0376836292E-2f);
  y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(-1.1514610310E-1f));
  y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(1.1676998740E-1f));
  y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(-1.2420140846E-1f));
  y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(1.4249322787E-1f));
  y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(-1.6668057665E-1f));
  y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(2.0000714765E-1f));
  y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(-2.4999993993E-1f));
  y = _mm256_fmadd_ps(y, m, _mm256_set1_ps(3.3333331174E-1f));
  y = _mm256_mul_ps(_mm256_mul_ps(y, m), z);
  y = _mm256_fmadd_ps(e, _mm256_set1_ps(-2.12194440e-4f), y);
  y = _mm256_fnmadd_ps(z, _mm256_set1_ps(0.5f), y);
  return _mm256_fmadd_ps(e, _mm256_set1_ps(0.693359375f), _mm256_add_ps(m, y));
}

// sin t and cos t for t in (0, 2π] (Cephes sinf/cosf: t - j·π/4 in [-π/4, π/4]
// by a three-part π/4, minimax polynomials there, quadrant by j).
AMLP_AVX2 inline void sincos_ps(__m256 t, __m256* s, __m256* c) {
  __m256i j = _mm256_cvttps_epi32(_mm256_mul_ps(t, _mm256_set1_ps(1.27323954473516f)));  // 4/π
  j = _mm256_and_si256(_mm256_add_epi32(j, _mm256_set1_epi32(1)), _mm256_set1_epi32(~1));  // even
  const __m256 y = _mm256_cvtepi32_ps(j);
  __m256 r = _mm256_fnmadd_ps(y, _mm256_set1_ps(0.78515625f), t);
  r = _mm256_fnmadd_ps(y, _mm256_set1_ps(2.4187564849853515625e-4f), r);
  r = _mm256_fnmadd_ps(y, _mm256_set1_ps(3.77489497744594108e-8f), r);
  const __m256 z = _mm256_mul_ps(r, r);
  __m256 ps = _mm256_set1_ps(-1.9515295891E-4f);
  ps = _mm256_fmadd_ps(ps, z, _mm256_set1_ps(8.3321608736E-3f));
  ps = _mm256_fmadd_ps(ps, z, _mm256_set1_ps(-1.6666654611E-1f));
  ps = _mm256_fmadd_ps(_mm256_mul_ps(ps, z), r, r);
  __m256 pc = _mm256_set1_ps(2.443315711809948E-5f);
  pc = _mm256_fmadd_ps(pc, z, _mm256_set1_ps(-1.388731625493765E-3f));
  pc = _mm256_fmadd_ps(pc, z, _mm256_set1_ps(4.166664568298827E-2f));
  pc = _mm256_fmadd_ps(_mm256_mul_ps(pc, z), z, _mm256_fnmadd_ps(z, _mm256_set1_ps(0.5f), _mm256_set1_ps(1.f)));
  // quadrant q = j/2 mod 4: (sin, cos) = (ps, pc), (pc, -ps), (-ps, -pc), (-pc, ps)
  const __m256i q = _mm256_srli_epi32(j, 1);
  const __m256 swap = _mm256_castsi256_ps(
      _mm256_cmpeq_epi32(_mm256_and_si256(q, _mm256_set1_epi32(1)), _mm256_set1_epi32(1)));
  const __m256 sin_sign = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_and_si256(q, _mm256_set1_epi32(2)), 30));
  const __m256 cos_sign =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_and_si256(_mm256_add_epi32(q, _mm256_set1_epi32(1)), _mm256_set1_epi32(2)), 30));
  *s = _mm256_xor_ps(_mm256_blendv_ps(ps, pc, swap), sin_sign);
  *c = _mm256_xor_ps(_mm256_blendv_ps(pc, ps, swap), cos_sign);
}

// N chunks from block first_block on (first_block % 8 == 0).
template <int N>
AMLP_AVX2 void chunks_avx2(float* out, uint64_t seed, uint64_t first_block, Uniform p) {
  __m256i x[N][4];
  philox8<N>(seed, first_block, x);
  const __m256 lo = _mm256_set1_ps(p.lo), w = _mm256_set1_ps(p.w);
  for (int g = 0; g < N; ++g) {
    __m256 v[4];
    for (int j = 0; j < 4; ++j)
      v[j] = _mm256_add_ps(lo, _mm256_mul_ps(w, scaled(x[g][j], k2Pow32Inv, k2Pow32Inv / 2)));
    store_transposed(out + g * kChunk, v);
  }
}

template <int N>
AMLP_AVX2 void chunks_avx2(float* out, uint64_t seed, uint64_t first_block, Normal p) {
  __m256i x[N][4];
  philox8<N>(seed, first_block, x);
  const __m256 mean = _mm256_set1_ps(p.mean), sd = _mm256_set1_ps(p.sd);
  for (int g = 0; g < N; ++g) {
    __m256 v[4];
    for (int j = 0; j < 4; j += 2) {  // pairs (word 0, word 1) and (word 2, word 3) of each block
      const __m256 u = scaled(x[g][j], k2Pow32Inv, k2Pow32Inv / 2);
      const __m256 t = scaled(x[g][j + 1], k2Pow32Inv2Pi, k2Pow32Inv2Pi / 2);
      const __m256 s = _mm256_sqrt_ps(_mm256_mul_ps(_mm256_set1_ps(-2.f), log_ps(u)));
      __m256 sn, cs;
      sincos_ps(t, &sn, &cs);
      v[j] = _mm256_add_ps(mean, _mm256_mul_ps(sd, _mm256_mul_ps(sn, s)));
      v[j + 1] = _mm256_add_ps(mean, _mm256_mul_ps(sd, _mm256_mul_ps(cs, s)));
    }
    store_transposed(out + g * kChunk, v);
  }
}

template <class P>
AMLP_AVX2 void fill_avx2(float* y, uint64_t seed, uint64_t c0, uint64_t c1, P p) {
  uint64_t c = c0;
  for (; c + 2 <= c1; c += 2, y += 2 * kChunk) chunks_avx2<2>(y, seed, c * 8, p);
  if (c < c1) chunks_avx2<1>(y, seed, c * 8, p);
}

// --- AVX-512 -------------------------------------------------------------------
// The AVX2 code at 16 lanes, operation for operation (same constants, same FMAs,
// a correctly rounded unsigned convert either way): bitwise the same numbers.

#define AMLP_AVX512 __attribute__((target("avx512f,fma")))

AMLP_AVX512 inline void mulhilo(__m512i c, __m512i m, __m512i* hi, __m512i* lo) {
  const __m512i e = _mm512_mul_epu32(c, m), o = _mm512_mul_epu32(_mm512_srli_epi64(c, 32), m);
  *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(e, 32), o);
  *lo = _mm512_mask_blend_epi32(0xAAAA, e, _mm512_slli_epi64(o, 32));
}

// N groups of 16 blocks from b0 (b0 % 16 == 0); x[g][j] lane k = word j of block b0 + 16g + k.
template <int N>
AMLP_AVX512 inline void philox16(uint64_t seed, uint64_t b0, __m512i (*x)[4]) {
  __m512i c0[N], c1[N], c2[N], c3[N];
  for (int g = 0; g < N; ++g) {
    const uint64_t b = b0 + 16 * uint64_t(g), step = b >> 16;
    c0[g] = _mm512_set1_epi32(int(uint32_t(step)));
    c1[g] = _mm512_set1_epi32(int(uint32_t(step >> 32)));
    c2[g] = _mm512_add_epi32(_mm512_set1_epi32(int(uint32_t(b & 0xffff))),
                             _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    c3[g] = _mm512_setzero_si512();
  }
  const __m512i m0 = _mm512_set1_epi32(int(kM0)), m1 = _mm512_set1_epi32(int(kM1));
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    const __m512i key0 = _mm512_set1_epi32(int(k0)), key1 = _mm512_set1_epi32(int(k1));
    for (int g = 0; g < N; ++g) {
      __m512i hi0, lo0, hi1, lo1;
      mulhilo(c0[g], m0, &hi0, &lo0);
      mulhilo(c2[g], m1, &hi1, &lo1);
      c0[g] = _mm512_ternarylogic_epi32(hi1, c1[g], key0, 0x96);  // a ^ b ^ c
      c2[g] = _mm512_ternarylogic_epi32(hi0, c3[g], key1, 0x96);
      c1[g] = lo1;
      c3[g] = lo0;
    }
    k0 += kW0;
    k1 += kW1;
  }
  for (int g = 0; g < N; ++g) {
    x[g][0] = c0[g];
    x[g][1] = c1[g];
    x[g][2] = c2[g];
    x[g][3] = c3[g];
  }
}

// Lane k of v[j] → out[4k + j] for 16 blocks (64 numbers).
AMLP_AVX512 inline void store_transposed(float* out, const __m512 v[4]) {
  const __m512 t0 = _mm512_unpacklo_ps(v[0], v[1]), t1 = _mm512_unpackhi_ps(v[0], v[1]);
  const __m512 t2 = _mm512_unpacklo_ps(v[2], v[3]), t3 = _mm512_unpackhi_ps(v[2], v[3]);
  const __m512 u0 = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));  // 0 4 8 12
  const __m512 u1 = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));  // 1 5 9 13
  const __m512 u2 = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));  // 2 6 10 14
  const __m512 u3 = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));  // 3 7 11 15
  const __m512 a = _mm512_shuffle_f32x4(u0, u1, 0x44), b = _mm512_shuffle_f32x4(u2, u3, 0x44);  // 0 4 1 5 | 2 6 3 7
  const __m512 c = _mm512_shuffle_f32x4(u0, u1, 0xEE), d = _mm512_shuffle_f32x4(u2, u3, 0xEE);  // 8 12 9 13 | 10 14 11 15
  _mm512_storeu_ps(out, _mm512_shuffle_f32x4(a, b, 0x88));
  _mm512_storeu_ps(out + 16, _mm512_shuffle_f32x4(a, b, 0xDD));
  _mm512_storeu_ps(out + 32, _mm512_shuffle_f32x4(c, d, 0x88));
  _mm512_storeu_ps(out + 48, _mm512_shuffle_f32x4(c, d, 0xDD));
}

AMLP_AVX512 inline __m512 scaled(__m512i x, float c, float d) {
  return _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepu32_ps(x), _mm512_set1_ps(c)), _mm512_set1_ps(d));
}

AMLP_AVX512 inline __m512 log_ps(__m512 x) {
  const __m512i xi = _mm512_castps_si512(x);
  __m512 e = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_srli_epi32(xi, 23), _mm512_set1_epi32(126)));
  __m512 m = _mm512_castsi512_ps(
      _mm512_or_si512(_mm512_and_si512(xi, _mm512_set1_epi32(0x007fffff)), _mm512_set1_epi32(0x3f000000)));
  const __mmask16 small = _mm512_cmp_ps_mask(m, _mm512_set1_ps(0.707106781186547524f), _CMP_LT_OQ);
  e = _mm512_mask_sub_ps(e, small, e, _mm512_set1_ps(1.f));
  m = _mm512_sub_ps(_mm512_mask_add_ps(m, small, m, m), _mm512_set1_ps(1.f));
  const __m512 z = _mm512_mul_ps(m, m);
  __m512 y = _mm512_set1_ps(7.0376836292E-2f);
  y = _mm512_fmadd_ps(y, m, _mm512_set1_ps(-1.1514610310E-1f));
  y = _mm512_fmadd_ps(y, m, _mm512_set1_ps(1.1676998740E-1f));
  y = _mm512_fmadd_ps(y, m, _mm512_set1_ps(-1.2420140846E-1f));
  y = _mm512_fmadd_ps(y, m, _mm512_set1_ps(1.4249322787E-1f));
  y = _mm512_fmadd_ps(y, m, _mm512_set1_ps(-1.6668057665E-1f));
  y = _mm512_fmadd_ps(y, m, _mm512_set1_ps(2.0000714765E-1f));
  y = _mm512_fmadd_ps(y, m, _mm512_set1_ps(-2.4999993993E-1f));
  y = _mm512_fmadd_ps(y, m, _mm512_set1_ps(3.3333331174E-1f));
  y = _mm512_mul_ps(_mm512_mul_ps(y, m), z);
  y = _mm512_fmadd_ps(e, _mm512_set1_ps(-2.12194440e-4f), y);
  y = _mm512_fnmadd_ps(z, _mm512_set1_ps(0.5f), y);
  return _mm512_fmadd_ps(e, _mm512_set1_ps(0.693359375f), _mm512_add_ps(m, y));
}

AMLP_AVX512 inline void sincos_ps(__m512 t, __m512* s, __m512* c) {
  __m512i j = _mm512_cvttps_epi32(_mm512_mul_ps(t, _mm512_set1_ps(1.27323954473516f)));
  j = _mm512_and_si512(_mm512_add_epi32(j, _mm512_set1_epi32(1)), _mm512_set1_epi32(~1));
  const __m512 y = _mm512_cvtepi32_ps(j);
  __m512 r = _mm512_fnmadd_ps(y, _mm512_set1_ps(0.78515625f), t);
  r = _mm512_fnmadd_ps(y, _mm512_set1_ps(2.4187564849853515625e-4f), r);
  r = _mm512_fnmadd_ps(y, _mm512_set1_ps(3.77489497744594108e-8f), r);
  const __m512 z = _mm512_mul_ps(r, r);
  __m512 ps = _mm512_set1_ps(-1.9515295891E-4f);
  ps = _mm512_fmadd_ps(ps, z, _mm512_set1_ps(8.3321608736E-3f));
  ps = _mm512_fmadd_ps(ps, z, _mm512_set1_ps(-1.6666654611E-1f));
  ps = _mm512_fmadd_ps(_mm512_mul_ps(ps, z), r, r);
  __m512 pc = _mm512_set1_ps(2.443315711809948E-5f);
  pc = _mm512_fmadd_ps(pc, z, _mm512_set1_ps(-1.388731625493765E-3f));
  pc = _mm512_fmadd_ps(pc, z, _mm512_set1_ps(4.166664568298827E-2f));
  pc = _mm512_fmadd_ps(_mm512_mul_ps(pc, z), z, _mm512_fnmadd_ps(z, _mm512_set1_ps(0.5f), _mm512_set1_ps(1.f)));
  const __m512i q = _mm512_srli_epi32(j, 1);
  const __mmask16 swap = _mm512_test_epi32_mask(q, _mm512_set1_epi32(1));
  const __m512i sin_sign = _mm512_slli_epi32(_mm512_and_si512(q, _mm512_set1_epi32(2)), 30);
  const __m512i cos_sign = _mm512_slli_epi32(_mm512_and_si512(_mm512_add_epi32(q, _mm512_set1_epi32(1)), _mm512_set1_epi32(2)), 30);
  *s = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(_mm512_mask_blend_ps(swap, ps, pc)), sin_sign));
  *c = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(_mm512_mask_blend_ps(swap, pc, ps)), cos_sign));
}

// 2N chunks (N groups of 16 blocks) from block first_block on (first_block % 16 == 0).
template <int N>
AMLP_AVX512 void chunks_avx512(float* out, uint64_t seed, uint64_t first_block, Uniform p) {
  __m512i x[N][4];
  philox16<N>(seed, first_block, x);
  const __m512 lo = _mm512_set1_ps(p.lo), w = _mm512_set1_ps(p.w);
  for (int g = 0; g < N; ++g) {
    __m512 v[4];
    for (int j = 0; j < 4; ++j)
      v[j] = _mm512_add_ps(lo, _mm512_mul_ps(w, scaled(x[g][j], k2Pow32Inv, k2Pow32Inv / 2)));
    store_transposed(out + g * 2 * kChunk, v);
  }
}

template <int N>
AMLP_AVX512 void chunks_avx512(float* out, uint64_t seed, uint64_t first_block, Normal p) {
  __m512i x[N][4];
  philox16<N>(seed, first_block, x);
  const __m512 mean = _mm512_set1_ps(p.mean), sd = _mm512_set1_ps(p.sd);
  for (int g = 0; g < N; ++g) {
    __m512 v[4];
    for (int j = 0; j < 4; j += 2) {
      const __m512 u = scaled(x[g][j], k2Pow32Inv, k2Pow32Inv / 2);
      const __m512 t = scaled(x[g][j + 1], k2Pow32Inv2Pi, k2Pow32Inv2Pi / 2);
      const __m512 s = _mm512_sqrt_ps(_mm512_mul_ps(_mm512_set1_ps(-2.f), log_ps(u)));
      __m512 sn, cs;
      sincos_ps(t, &sn, &cs);
      v[j] = _mm512_add_ps(mean, _mm512_mul_ps(sd, _mm512_mul_ps(sn, s)));
      v[j + 1] = _mm512_add_ps(mean, _mm512_mul_ps(sd, _mm512_mul_ps(cs, s)));
    }
    store_transposed(out + g * 2 * kChunk, v);
  }
}

// Pairs of chunks at even chunk numbers through 16 lanes; a lone chunk at either end through AVX2.
template <class P>
AMLP_AVX512 void fill_avx512(float* y, uint64_t seed, uint64_t c0, uint64_t c1, P p) {
  uint64_t c = c0;
  if (c < c1 && c % 2) {
    chunks_avx2<1>(y, seed, c * 8, p);
    ++c;
    y += kChunk;
  }
  for (; c + 4 <= c1; c += 4, y += 4 * kChunk) chunks_avx512<2>(y, seed, c * 8, p);
  for (; c + 2 <= c1; c += 2, y += 2 * kChunk) chunks_avx512<1>(y, seed, c * 8, p);
  if (c < c1) chunks_avx2<1>(y, seed, c * 8, p);
}

#endif  // AMLP_PHILOX_X86

template <class P>
void fill_chunks(float* y, uint64_t seed, uint64_t c0, uint64_t c1, P p, Isa isa) {
#if AMLP_PHILOX_X86
  if (isa == Isa::Avx512) return fill_avx512(y, seed, c0, c1, p);
  if (isa == Isa::Avx2) return fill_avx2(y, seed, c0, c1, p);
#endif
  (void)isa;
  for (uint64_t c = c0; c < c1; ++c, y += kChunk) chunk_scalar(y, seed, c * 8, p);
}

// Positions [begin, end): whole chunks in place, partial ones through a scratch chunk.
template <class P>
void fill(float* y, uint64_t seed, uint64_t begin, uint64_t end, P p, Isa isa) {
  while (begin < end) {
    const uint64_t c = begin / kChunk, at = begin % kChunk;
    if (at == 0 && end - begin >= kChunk) {
      const uint64_t whole = (end - begin) / kChunk;
      fill_chunks(y, seed, c, c + whole, p, isa);
      y += whole * kChunk;
      begin += whole * kChunk;
      continue;
    }
    alignas(32) float tmp[kChunk];
    fill_chunks(tmp, seed, c, c + 1, p, isa);
    const uint64_t take = end - begin < kChunk - at ? end - begin : kChunk - at;
    std::memcpy(y, tmp + at, take * sizeof(float));
    y += take;
    begin += take;
  }
}

}  // namespace

Isa best_isa() {
#if AMLP_PHILOX_X86
  static const Isa isa = __builtin_cpu_supports("avx512f")                                     ? Isa::Avx512
                         : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? Isa::Avx2
                                                                                           : Isa::Scalar;
  return isa;
#else
  return Isa::Scalar;
#endif
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Avx512: return "avx512";
    case Isa::Avx2: return "avx2";
    case Isa::Scalar: break;
  }
  return "scalar";
}

// An ISA this CPU lacks falls back to the best one it has (they rank Scalar < Avx2 < Avx512).
static Isa supported(Isa isa) { return int(isa) > int(best_isa()) ? best_isa() : isa; }

void fill_uniform(float* y, uint64_t seed, uint64_t begin, uint64_t end, float lo, float hi, Isa isa) {
  isa = supported(isa);
  fill(y, seed, begin, end, Uniform{lo, hi - lo}, isa);
}

void fill_normal(float* y, uint64_t seed, uint64_t begin, uint64_t end, float mean, float stddev, Isa isa) {
  isa = supported(isa);
  fill(y, seed, begin, end, Normal{mean, stddev}, isa);
}

}  // namespace amlp::philox
