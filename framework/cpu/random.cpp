// random.cpp — CPU random numbers: cuRAND's Philox4x32-10 stream (philox.h),
// so both backends draw the same numbers from one (seed, offset); vectorised,
// and from kSplitAt numbers on split in two parts, the second on a helper
// thread (split_in_two.h).
#include "framework/cpu/cpu_backend.h"
#include "framework/cpu/split_in_two.h"
#include "framework/cpu/philox.h"

namespace amlp::cpu {

namespace {

// Below this, waking the helper costs more than half the work saves.
constexpr size_t kSplitAt = size_t(1) << 15;

// Positions [offset, offset + n) into y, in two halves when worth it. The cut
// is any position (each number depends on its position alone); a multiple of
// 32 keeps both halves on whole vector chunks.
template <class Fill>
void draw(float* y, size_t n, uint64_t offset, Fill fill) {
  if (n < kSplitAt) return fill(y, offset, offset + n);
  const uint64_t cut = (offset + n / 2) / 32 * 32;
  split_in_two([&](int part) {
    if (part == 0) fill(y, offset, cut);
    else fill(y + (cut - offset), cut, offset + n);
  });
}

void random_normal(Backend&, float* y, size_t n, uint64_t seed, uint64_t offset, float mean, float sd) {
  draw(y, n, offset, [=](float* out, uint64_t b, uint64_t e) { philox::fill_normal(out, seed, b, e, mean, sd); });
}

void random_uniform(Backend&, float* y, size_t n, uint64_t seed, uint64_t offset, float lo, float hi) {
  draw(y, n, offset, [=](float* out, uint64_t b, uint64_t e) { philox::fill_uniform(out, seed, b, e, lo, hi); });
}

}  // namespace

void add_random_kernels(KernelTable& t) {
  t.random_normal = random_normal;
  t.random_uniform = random_uniform;
}

}  // namespace amlp::cpu
