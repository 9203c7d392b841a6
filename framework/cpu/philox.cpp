// philox.cpp — the stream of philox.h, filled 32 numbers (8 blocks, a chunk)
// at a time: through the vector paths of philox_simd.h where the CPU has
// them, else a scalar fallback that computes the same positions one block at
// a time with libm.
//
// Chunks are aligned to the stream (positions 32k .. 32k+31), so every
// number is computed by the same lane arithmetic wherever a fill starts or
// stops: a partial chunk at either end is made whole in a scratch buffer.
#include "framework/cpu/philox.h"

#include <cstring>

#include "framework/cpu/philox_simd.h"

namespace amlp::philox {

namespace {

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

template <class P>
void fill_chunks(float* y, uint64_t seed, uint64_t c0, uint64_t c1, P p, Isa isa) {
#if AMLP_PHILOX_X86
  if (isa == Isa::Avx2) return fill_avx2(y, seed, c0, c1, p);
  if (isa == Isa::Avx512) {  // pairs of chunks at even chunk numbers; a lone chunk at either end through AVX2
    if (c0 < c1 && c0 % 2) {
      fill_avx2(y, seed, c0, c0 + 1, p);
      ++c0;
      y += kChunk;
    }
    const uint64_t pairs_end = c0 + (c1 - c0) / 2 * 2;
    fill_avx512(y, seed, c0, pairs_end, p);
    if (pairs_end < c1) fill_avx2(y + (pairs_end - c0) * kChunk, seed, pairs_end, c1, p);
    return;
  }
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
