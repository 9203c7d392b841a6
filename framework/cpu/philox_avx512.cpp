// philox_avx512.cpp — the stream of philox.h through 16 lanes (AVX-512F):
// the body of philox_lanes.h over 512-bit vectors.
#include "framework/cpu/philox.h"
#include "framework/cpu/philox_simd.h"

#if AMLP_PHILOX_X86
// GCC 12 flags _mm512_undefined_*'s self-initialisation inside the AVX-512
// intrinsics as uninitialised (GCC bug 105593): not our code, no real read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#define AMLP_LANES_TARGET __attribute__((target("avx512f,fma")))

namespace amlp::philox {
namespace {

struct Avx512 {
  static constexpr int kLanes = 16;
  using I = __m512i;
  using F = __m512;
  using M = __mmask16;

  AMLP_LANES_TARGET static I set1(uint32_t v) { return _mm512_set1_epi32(int(v)); }
  AMLP_LANES_TARGET static I lane_index() {
    return _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  }
  AMLP_LANES_TARGET static I add(I a, I b) { return _mm512_add_epi32(a, b); }
  AMLP_LANES_TARGET static I sub(I a, I b) { return _mm512_sub_epi32(a, b); }
  AMLP_LANES_TARGET static I and_(I a, I b) { return _mm512_and_si512(a, b); }
  AMLP_LANES_TARGET static I or_(I a, I b) { return _mm512_or_si512(a, b); }
  AMLP_LANES_TARGET static I xor_(I a, I b) { return _mm512_xor_si512(a, b); }
  AMLP_LANES_TARGET static I xor3(I a, I b, I c) { return _mm512_ternarylogic_epi32(a, b, c, 0x96); }
  template <int k>
  AMLP_LANES_TARGET static I srli(I a) { return _mm512_srli_epi32(a, k); }
  template <int k>
  AMLP_LANES_TARGET static I slli(I a) { return _mm512_slli_epi32(a, k); }
  // 32×32 → 64-bit products of every lane of c with m: (high halves, low halves).
  AMLP_LANES_TARGET static void mulhilo(I c, I m, I* hi, I* lo) {
    const I e = _mm512_mul_epu32(c, m), o = _mm512_mul_epu32(_mm512_srli_epi64(c, 32), m);  // even, odd lanes
    *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(e, 32), o);
    *lo = _mm512_mask_blend_epi32(0xAAAA, e, _mm512_slli_epi64(o, 32));
  }

  AMLP_LANES_TARGET static F setf(float v) { return _mm512_set1_ps(v); }
  AMLP_LANES_TARGET static F addf(F a, F b) { return _mm512_add_ps(a, b); }
  AMLP_LANES_TARGET static F subf(F a, F b) { return _mm512_sub_ps(a, b); }
  AMLP_LANES_TARGET static F mulf(F a, F b) { return _mm512_mul_ps(a, b); }
  AMLP_LANES_TARGET static F sqrt(F a) { return _mm512_sqrt_ps(a); }
  AMLP_LANES_TARGET static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  AMLP_LANES_TARGET static F fnmadd(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }
  AMLP_LANES_TARGET static F to_float(I a) { return _mm512_cvtepi32_ps(a); }
  AMLP_LANES_TARGET static F u32_to_float(I x) { return _mm512_cvtepu32_ps(x); }  // correctly rounded
  AMLP_LANES_TARGET static I trunc_int(F a) { return _mm512_cvttps_epi32(a); }
  AMLP_LANES_TARGET static F as_float(I a) { return _mm512_castsi512_ps(a); }
  AMLP_LANES_TARGET static I as_int(F a) { return _mm512_castps_si512(a); }
  AMLP_LANES_TARGET static M less(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  AMLP_LANES_TARGET static F select(M m, F a, F b) { return _mm512_mask_blend_ps(m, a, b); }
  AMLP_LANES_TARGET static F addf_where(M m, F a, F b) { return _mm512_mask_add_ps(a, m, a, b); }
  AMLP_LANES_TARGET static F subf_where(M m, F a, F b) { return _mm512_mask_sub_ps(a, m, a, b); }
  AMLP_LANES_TARGET static M odd(I x) { return _mm512_test_epi32_mask(x, _mm512_set1_epi32(1)); }

  // 16 blocks (64 numbers).
  AMLP_LANES_TARGET static void store_transposed(float* out, const F v[4]) {
    const F t0 = _mm512_unpacklo_ps(v[0], v[1]), t1 = _mm512_unpackhi_ps(v[0], v[1]);
    const F t2 = _mm512_unpacklo_ps(v[2], v[3]), t3 = _mm512_unpackhi_ps(v[2], v[3]);
    const F u0 = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));  // 0 4 8 12
    const F u1 = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));  // 1 5 9 13
    const F u2 = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));  // 2 6 10 14
    const F u3 = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));  // 3 7 11 15
    const F a = _mm512_shuffle_f32x4(u0, u1, 0x44), b = _mm512_shuffle_f32x4(u2, u3, 0x44);  // 0 4 1 5 | 2 6 3 7
    const F c = _mm512_shuffle_f32x4(u0, u1, 0xEE), d = _mm512_shuffle_f32x4(u2, u3, 0xEE);  // 8 12 9 13 | 10 14 11 15
    _mm512_storeu_ps(out, _mm512_shuffle_f32x4(a, b, 0x88));
    _mm512_storeu_ps(out + 16, _mm512_shuffle_f32x4(a, b, 0xDD));
    _mm512_storeu_ps(out + 32, _mm512_shuffle_f32x4(c, d, 0x88));
    _mm512_storeu_ps(out + 48, _mm512_shuffle_f32x4(c, d, 0xDD));
  }
};

}  // namespace
}  // namespace amlp::philox

#include "framework/cpu/philox_lanes.h"

namespace amlp::philox {

void fill_avx512(float* y, uint64_t seed, uint64_t c0, uint64_t c1, Uniform p) { fill_lanes<Avx512>(y, seed, c0, c1, p); }
void fill_avx512(float* y, uint64_t seed, uint64_t c0, uint64_t c1, Normal p) { fill_lanes<Avx512>(y, seed, c0, c1, p); }

}  // namespace amlp::philox

#endif  // AMLP_PHILOX_X86
