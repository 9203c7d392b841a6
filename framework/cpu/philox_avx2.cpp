// philox_avx2.cpp — the stream of philox.h through 8 lanes (AVX2 + FMA): the
// body of philox_lanes.h over 256-bit vectors.
#include "framework/cpu/philox.h"
#include "framework/cpu/philox_simd.h"

#if AMLP_PHILOX_X86
#include <immintrin.h>

#define AMLP_LANES_TARGET __attribute__((target("avx2,fma")))

namespace amlp::philox {
namespace {

struct Avx2 {
  static constexpr int kLanes = 8;
  using I = __m256i;
  using F = __m256;
  using M = __m256;  // all ones where true

  AMLP_LANES_TARGET static I set1(uint32_t v) { return _mm256_set1_epi32(int(v)); }
  AMLP_LANES_TARGET static I lane_index() { return _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7); }
  AMLP_LANES_TARGET static I add(I a, I b) { return _mm256_add_epi32(a, b); }
  AMLP_LANES_TARGET static I sub(I a, I b) { return _mm256_sub_epi32(a, b); }
  AMLP_LANES_TARGET static I and_(I a, I b) { return _mm256_and_si256(a, b); }
  AMLP_LANES_TARGET static I or_(I a, I b) { return _mm256_or_si256(a, b); }
  AMLP_LANES_TARGET static I xor_(I a, I b) { return _mm256_xor_si256(a, b); }
  AMLP_LANES_TARGET static I xor3(I a, I b, I c) { return _mm256_xor_si256(_mm256_xor_si256(a, b), c); }
  template <int k>
  AMLP_LANES_TARGET static I srli(I a) { return _mm256_srli_epi32(a, k); }
  template <int k>
  AMLP_LANES_TARGET static I slli(I a) { return _mm256_slli_epi32(a, k); }
  // 32×32 → 64-bit products of every lane of c with m: (high halves, low halves).
  AMLP_LANES_TARGET static void mulhilo(I c, I m, I* hi, I* lo) {
    const I e = _mm256_mul_epu32(c, m), o = _mm256_mul_epu32(_mm256_srli_epi64(c, 32), m);  // even, odd lanes
    *hi = _mm256_blend_epi32(_mm256_srli_epi64(e, 32), o, 0xAA);
    *lo = _mm256_blend_epi32(e, _mm256_slli_epi64(o, 32), 0xAA);
  }

  AMLP_LANES_TARGET static F setf(float v) { return _mm256_set1_ps(v); }
  AMLP_LANES_TARGET static F addf(F a, F b) { return _mm256_add_ps(a, b); }
  AMLP_LANES_TARGET static F subf(F a, F b) { return _mm256_sub_ps(a, b); }
  AMLP_LANES_TARGET static F mulf(F a, F b) { return _mm256_mul_ps(a, b); }
  AMLP_LANES_TARGET static F sqrt(F a) { return _mm256_sqrt_ps(a); }
  AMLP_LANES_TARGET static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  AMLP_LANES_TARGET static F fnmadd(F a, F b, F c) { return _mm256_fnmadd_ps(a, b, c); }
  AMLP_LANES_TARGET static F to_float(I a) { return _mm256_cvtepi32_ps(a); }
  // float(x) for unsigned x, correctly rounded: both halves convert exactly,
  // hi·65536 is exact, so the one add rounds once (AVX2 has no unsigned convert).
  AMLP_LANES_TARGET static F u32_to_float(I x) {
    const F hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(x, 16));
    const F lo = _mm256_cvtepi32_ps(_mm256_and_si256(x, _mm256_set1_epi32(0xffff)));
    return _mm256_fmadd_ps(hi, _mm256_set1_ps(65536.f), lo);
  }
  AMLP_LANES_TARGET static I trunc_int(F a) { return _mm256_cvttps_epi32(a); }
  AMLP_LANES_TARGET static F as_float(I a) { return _mm256_castsi256_ps(a); }
  AMLP_LANES_TARGET static I as_int(F a) { return _mm256_castps_si256(a); }
  AMLP_LANES_TARGET static M less(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  AMLP_LANES_TARGET static F select(M m, F a, F b) { return _mm256_blendv_ps(a, b, m); }
  AMLP_LANES_TARGET static F addf_where(M m, F a, F b) { return _mm256_add_ps(a, _mm256_and_ps(m, b)); }
  AMLP_LANES_TARGET static F subf_where(M m, F a, F b) { return _mm256_sub_ps(a, _mm256_and_ps(m, b)); }
  AMLP_LANES_TARGET static M odd(I x) {
    return _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(x, _mm256_set1_epi32(1)), _mm256_set1_epi32(1)));
  }

  // 8 blocks (32 numbers).
  AMLP_LANES_TARGET static void store_transposed(float* out, const F v[4]) {
    const F t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
    const F t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
    const F u0 = _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(t0), _mm256_castps_pd(t2)));  // blocks 0 | 4
    const F u1 = _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(t0), _mm256_castps_pd(t2)));  // 1 | 5
    const F u2 = _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(t1), _mm256_castps_pd(t3)));  // 2 | 6
    const F u3 = _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(t1), _mm256_castps_pd(t3)));  // 3 | 7
    _mm256_storeu_ps(out, _mm256_permute2f128_ps(u0, u1, 0x20));
    _mm256_storeu_ps(out + 8, _mm256_permute2f128_ps(u2, u3, 0x20));
    _mm256_storeu_ps(out + 16, _mm256_permute2f128_ps(u0, u1, 0x31));
    _mm256_storeu_ps(out + 24, _mm256_permute2f128_ps(u2, u3, 0x31));
  }
};

}  // namespace
}  // namespace amlp::philox

#include "framework/cpu/philox_lanes.h"

namespace amlp::philox {

void fill_avx2(float* y, uint64_t seed, uint64_t c0, uint64_t c1, Uniform p) { fill_lanes<Avx2>(y, seed, c0, c1, p); }
void fill_avx2(float* y, uint64_t seed, uint64_t c0, uint64_t c1, Normal p) { fill_lanes<Avx2>(y, seed, c0, c1, p); }

}  // namespace amlp::philox

#endif  // AMLP_PHILOX_X86
