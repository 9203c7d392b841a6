// philox_lanes.h — the one body of the vector paths (philox_simd.h), written
// over a vector type V: philox_avx2.cpp and philox_avx512.cpp each define V
// and AMLP_LANES_TARGET (the function attribute naming their ISA), then
// include this file. V::kLanes consecutive blocks run through the 10 rounds
// in the lanes of one vector group, then Box–Muller or the uniform map, then
// a transpose into stream order (V::store_transposed: 4·kLanes numbers).
//
// V provides, lane by lane on 32-bit lanes:
//   I, F, M                      integer, float and mask vectors
//   set1(u32), lane_index(), add, sub, and_, or_, xor_, xor3, srli<k>, slli<k>
//   mulhilo(c, m, &hi, &lo)      the 64-bit products' high and low halves
//   setf, addf, subf, mulf, sqrt, fmadd(a, b, c) = a·b + c, fnmadd = c − a·b
//   to_float (signed), u32_to_float (correctly rounded), trunc_int, as_float, as_int
//   less(a, b), select(m, a, b) = m ? b : a, odd(x),
//   addf_where(m, a, b) = m ? a + b : a, subf_where(m, a, b) = m ? a − b : a
//   store_transposed(out, v[4])  lane k of v[j] → out[4k + j]
// Every step is the same operation at either width, with the same constants
// and the same FMAs, so the two paths give bitwise the same numbers.
//
// Everything here is in an unnamed namespace: each ISA file that includes it
// has its own copy, compiled for its ISA alone.
#pragma once

namespace amlp::philox {
namespace {

// N groups of V::kLanes blocks, group g = blocks b0 + g·kLanes .. (b0 % kLanes
// == 0, so one 65536-block step holds a group): x[g][j] lane k = word j of
// block b0 + g·kLanes + k. Groups interleave round by round: independent
// chains for the multipliers.
template <class V, int N>
AMLP_LANES_TARGET inline void philox_rounds(uint64_t seed, uint64_t b0, typename V::I (*x)[4]) {
  using I = typename V::I;
  I c0[N], c1[N], c2[N], c3[N];
  for (int g = 0; g < N; ++g) {
    const uint64_t b = b0 + uint64_t(V::kLanes) * uint64_t(g), step = b >> 16;
    c0[g] = V::set1(uint32_t(step));
    c1[g] = V::set1(uint32_t(step >> 32));
    c2[g] = V::add(V::set1(uint32_t(b & 0xffff)), V::lane_index());
    c3[g] = V::set1(0);
  }
  const I m0 = V::set1(kM0), m1 = V::set1(kM1);
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    const I key0 = V::set1(k0), key1 = V::set1(k1);
    for (int g = 0; g < N; ++g) {
      I hi0, lo0, hi1, lo1;
      V::mulhilo(c0[g], m0, &hi0, &lo0);
      V::mulhilo(c2[g], m1, &hi1, &lo1);
      c0[g] = V::xor3(hi1, c1[g], key0);
      c2[g] = V::xor3(hi0, c3[g], key1);
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

// float(x) * c + d, a multiply then an add (c a power of two: the product is
// exact, so one rounding, FMA or not).
template <class V>
AMLP_LANES_TARGET inline typename V::F scaled(typename V::I x, float c, float d) {
  return V::addf(V::mulf(V::u32_to_float(x), V::setf(c)), V::setf(d));
}

// ln x for x in [2^-33, 1] (Cephes logf: x = m·2^e, m in [√½, √2), a degree-8
// polynomial in m - 1; ≤ ~2 ulp). ln 1 = 0 exactly.
template <class V>
AMLP_LANES_TARGET inline typename V::F log_lanes(typename V::F x) {
  using F = typename V::F;
  const typename V::I xi = V::as_int(x);
  F e = V::to_float(V::sub(V::template srli<23>(xi), V::set1(126)));
  F m = V::as_float(V::or_(V::and_(xi, V::set1(0x007fffff)), V::set1(0x3f000000)));  // [½, 1)
  const typename V::M small = V::less(m, V::setf(0.707106781186547524f));
  e = V::subf_where(small, e, V::setf(1.f));
  m = V::subf(V::addf_where(small, m, m), V::setf(1.f));
  const F z = V::mulf(m, m);
  F y = V::setf(7.0376836292E-2f);
  y = V::fmadd(y, m, V::setf(-1.1514610310E-1f));
  y = V::fmadd(y, m, V::setf(1.1676998740E-1f));
  y = V::fmadd(y, m, V::setf(-1.2420140846E-1f));
  y = V::fmadd(y, m, V::setf(1.4249322787E-1f));
  y = V::fmadd(y, m, V::setf(-1.6668057665E-1f));
  y = V::fmadd(y, m, V::setf(2.0000714765E-1f));
  y = V::fmadd(y, m, V::setf(-2.4999993993E-1f));
  y = V::fmadd(y, m, V::setf(3.3333331174E-1f));
  y = V::mulf(V::mulf(y, m), z);
  y = V::fmadd(e, V::setf(-2.12194440e-4f), y);
  y = V::fnmadd(z, V::setf(0.5f), y);
  return V::fmadd(e, V::setf(0.693359375f), V::addf(m, y));
}

// sin t and cos t for t in (0, 2π] (Cephes sinf/cosf: t - j·π/4 in [-π/4, π/4]
// by a three-part π/4, minimax polynomials there, quadrant by j).
template <class V>
AMLP_LANES_TARGET inline void sincos_lanes(typename V::F t, typename V::F* s, typename V::F* c) {
  using F = typename V::F;
  using I = typename V::I;
  I j = V::trunc_int(V::mulf(t, V::setf(1.27323954473516f)));  // 4/π
  j = V::and_(V::add(j, V::set1(1)), V::set1(~1u));            // even
  const F y = V::to_float(j);
  F r = V::fnmadd(y, V::setf(0.78515625f), t);
  r = V::fnmadd(y, V::setf(2.4187564849853515625e-4f), r);
  r = V::fnmadd(y, V::setf(3.77489497744594108e-8f), r);
  const F z = V::mulf(r, r);
  F ps = V::setf(-1.9515295891E-4f);
  ps = V::fmadd(ps, z, V::setf(8.3321608736E-3f));
  ps = V::fmadd(ps, z, V::setf(-1.6666654611E-1f));
  ps = V::fmadd(V::mulf(ps, z), r, r);
  F pc = V::setf(2.443315711809948E-5f);
  pc = V::fmadd(pc, z, V::setf(-1.388731625493765E-3f));
  pc = V::fmadd(pc, z, V::setf(4.166664568298827E-2f));
  pc = V::fmadd(V::mulf(pc, z), z, V::fnmadd(z, V::setf(0.5f), V::setf(1.f)));
  // quadrant q = j/2 mod 4: (sin, cos) = (ps, pc), (pc, -ps), (-ps, -pc), (-pc, ps)
  const I q = V::template srli<1>(j);
  const typename V::M swap = V::odd(q);
  const I sin_sign = V::template slli<30>(V::and_(q, V::set1(2)));
  const I cos_sign = V::template slli<30>(V::and_(V::add(q, V::set1(1)), V::set1(2)));
  *s = V::as_float(V::xor_(V::as_int(V::select(swap, ps, pc)), sin_sign));
  *c = V::as_float(V::xor_(V::as_int(V::select(swap, pc, ps)), cos_sign));
}

// One group's words x[0..3] (lane k: block k's) mapped to numbers v[0..3].
template <class V>
AMLP_LANES_TARGET inline void map_group(const typename V::I x[4], typename V::F v[4], Uniform p) {
  const typename V::F lo = V::setf(p.lo), w = V::setf(p.w);
  for (int j = 0; j < 4; ++j) v[j] = V::addf(lo, V::mulf(w, scaled<V>(x[j], k2Pow32Inv, k2Pow32Inv / 2)));
}

template <class V>
AMLP_LANES_TARGET inline void map_group(const typename V::I x[4], typename V::F v[4], Normal p) {
  using F = typename V::F;
  const F mean = V::setf(p.mean), sd = V::setf(p.sd);
  for (int j = 0; j < 4; j += 2) {  // pairs (word 0, word 1) and (word 2, word 3) of each block
    const F u = scaled<V>(x[j], k2Pow32Inv, k2Pow32Inv / 2);
    const F t = scaled<V>(x[j + 1], k2Pow32Inv2Pi, k2Pow32Inv2Pi / 2);
    const F s = V::sqrt(V::mulf(V::setf(-2.f), log_lanes<V>(u)));
    F sn, cs;
    sincos_lanes<V>(t, &sn, &cs);
    v[j] = V::addf(mean, V::mulf(sd, V::mulf(sn, s)));
    v[j + 1] = V::addf(mean, V::mulf(sd, V::mulf(cs, s)));
  }
}

// N groups of kLanes blocks from block first_block on (first_block % kLanes == 0).
template <class V, int N, class P>
AMLP_LANES_TARGET void chunks(float* out, uint64_t seed, uint64_t first_block, P p) {
  typename V::I x[N][4];
  philox_rounds<V, N>(seed, first_block, x);
  for (int g = 0; g < N; ++g) {
    typename V::F v[4];
    map_group<V>(x[g], v, p);
    V::store_transposed(out + g * 4 * V::kLanes, v);
  }
}

// Chunks [c0, c1), both multiples of a group's chunks (kLanes / 8), two groups at a time.
template <class V, class P>
AMLP_LANES_TARGET void fill_lanes(float* y, uint64_t seed, uint64_t c0, uint64_t c1, P p) {
  constexpr uint64_t kGroup = V::kLanes / 8;
  uint64_t c = c0;
  for (; c + 2 * kGroup <= c1; c += 2 * kGroup, y += 2 * kGroup * kChunk) chunks<V, 2>(y, seed, c * 8, p);
  for (; c + kGroup <= c1; c += kGroup, y += kGroup * kChunk) chunks<V, 1>(y, seed, c * 8, p);
}

}  // namespace
}  // namespace amlp::philox
