// box_muller.h — two Philox words to two normals, operation for operation as
// the CPU backend's vector generator computes them (cpu/philox.cpp: the
// AVX2/AVX-512 paths, bitwise the same as each other), so a seed draws the
// same bits on the CPU and on a GPU.
//
//   float z[2];
//   box_muller_pair(w0, w1, z);   // z[0] = s·sin t, z[1] = s·cos t
//
// Compiled for the device (random.cu) and for the host (a test compares it
// with the CPU generator bit for bit over many words). Every operation
// rounds once and nothing is contracted: on the device through the _rn
// intrinsics, on the host through fma (a product is fma(a, b, -0), a sum
// fma(a, 1, b)), whatever the host compiler's contraction setting.
#pragma once
#include <cstdint>
#include <cstring>
#ifndef __CUDA_ARCH__
#include <cmath>
#endif

#ifdef __CUDACC__
#define AMLP_HD __host__ __device__ __forceinline__
#else
#define AMLP_HD inline
#endif

namespace amlp::cuda::bm {

AMLP_HD float fmul(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return std::fma(a, b, -0.0f);  // the product, rounded once (a zero keeps its sign)
#endif
}
AMLP_HD float fadd(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return std::fma(a, 1.0f, b);
#endif
}
AMLP_HD float fsub(float a, float b) { return fadd(a, -b); }
AMLP_HD float ffma(float a, float b, float c) {
#ifdef __CUDA_ARCH__
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
AMLP_HD float fsqrt(float a) {
#ifdef __CUDA_ARCH__
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);  // correctly rounded, as _mm256_sqrt_ps
#endif
}
// The bits as the other type (memcpy is a device function too; it compiles to a move).
AMLP_HD float bits_to_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
AMLP_HD uint32_t float_to_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

constexpr float k2Pow32Inv = 2.3283064e-10f;                  // philox::k2Pow32Inv
constexpr float k2Pow32Inv2Pi = 2.3283064e-10f * 6.2831855f;  // philox::k2Pow32Inv2Pi

// float(x), correctly rounded: both 16-bit halves convert exactly, hi·65536 is exact.
AMLP_HD float u32_to_float(uint32_t x) {
  return ffma(static_cast<float>(static_cast<int>(x >> 16)), 65536.f, static_cast<float>(static_cast<int>(x & 0xffffu)));
}
AMLP_HD float scaled(uint32_t x, float c, float d) { return fadd(fmul(u32_to_float(x), c), d); }

// ln x for x in [2^-33, 1]: cpu/philox.cpp's log_ps.
AMLP_HD float log_cephes(float x) {
  const uint32_t xi = float_to_bits(x);
  float e = static_cast<float>(static_cast<int>(xi >> 23) - 126);
  float m = bits_to_float((xi & 0x007fffffu) | 0x3f000000u);  // [½, 1)
  const bool small = m < 0.707106781186547524f;
  e = fsub(e, small ? 1.f : 0.f);
  m = fsub(fadd(m, small ? m : 0.f), 1.f);
  const float z = fmul(m, m);
  float y = 7.0376836292E-2f;
  y = ffma(y, m, -1.1514610310E-1f);
  y = ffma(y, m, 1.1676998740E-1f);
  y = ffma(y, m, -1.2420140846E-1f);
  y = ffma(y, m, 1.4249322787E-1f);
  y = ffma(y, m, -1.6668057665E-1f);
  y = ffma(y, m, 2.0000714765E-1f);
  y = ffma(y, m, -2.4999993993E-1f);
  y = ffma(y, m, 3.3333331174E-1f);
  y = fmul(fmul(y, m), z);
  y = ffma(e, -2.12194440e-4f, y);
  y = ffma(-z, 0.5f, y);
  return ffma(e, 0.693359375f, fadd(m, y));
}

// sin t and cos t for t in (0, 2π]: cpu/philox.cpp's sincos_ps.
AMLP_HD void sincos_cephes(float t, float* s, float* c) {
  int j = static_cast<int>(fmul(t, 1.27323954473516f));  // truncation, as cvttps
  j = (j + 1) & ~1;
  const float y = static_cast<float>(j);
  float r = ffma(-y, 0.78515625f, t);
  r = ffma(-y, 2.4187564849853515625e-4f, r);
  r = ffma(-y, 3.77489497744594108e-8f, r);
  const float z = fmul(r, r);
  float ps = -1.9515295891E-4f;
  ps = ffma(ps, z, 8.3321608736E-3f);
  ps = ffma(ps, z, -1.6666654611E-1f);
  ps = ffma(fmul(ps, z), r, r);
  float pc = 2.443315711809948E-5f;
  pc = ffma(pc, z, -1.388731625493765E-3f);
  pc = ffma(pc, z, 4.166664568298827E-2f);
  pc = ffma(fmul(pc, z), z, ffma(-z, 0.5f, 1.f));
  // quadrant q = j/2 mod 4: (sin, cos) = (ps, pc), (pc, -ps), (-ps, -pc), (-pc, ps)
  const uint32_t q = static_cast<uint32_t>(j) >> 1;
  const bool swap = (q & 1u) != 0;
  const uint32_t sin_sign = (q & 2u) << 30, cos_sign = ((q + 1u) & 2u) << 30;
  *s = bits_to_float(float_to_bits(swap ? pc : ps) ^ sin_sign);
  *c = bits_to_float(float_to_bits(swap ? ps : pc) ^ cos_sign);
}

// The pair (w0, w1) of the stream to mean + sd·(s·sin t, s·cos t).
AMLP_HD void box_muller_pair(uint32_t w0, uint32_t w1, float mean, float sd, float* out2) {
  const float u = scaled(w0, k2Pow32Inv, k2Pow32Inv / 2);
  const float t = scaled(w1, k2Pow32Inv2Pi, k2Pow32Inv2Pi / 2);
  const float s = fsqrt(fmul(-2.f, log_cephes(u)));
  float sn, cs;
  sincos_cephes(t, &sn, &cs);
  out2[0] = fadd(mean, fmul(sd, fmul(sn, s)));
  out2[1] = fadd(mean, fmul(sd, fmul(cs, s)));
}

}  // namespace amlp::cuda::bm

#undef AMLP_HD
