// random.cpp — randn and rand_uniform from one global Philox4x32-10 stream:
// each op draws at the current (seed, offset) and advances it, so a seed
// fixes every number on every backend. Kernels: cpu/random.cpp, cuda/random.cpp (cuRAND).
#include <mutex>

#include "framework/ops/op.h"

namespace amlp {

using namespace ops;

namespace {

struct RandomState {
  std::mutex mu;
  uint64_t seed = 0;
  uint64_t offset = 0;
};
RandomState& rng() {
  static RandomState r;
  return r;
}

// Draw position for n numbers; Philox makes 4 per counter step.
std::pair<uint64_t, uint64_t> draw(size_t n) {
  RandomState& r = rng();
  std::lock_guard<std::mutex> lk(r.mu);
  auto at = std::make_pair(r.seed, r.offset);
  r.offset += (n + 3) / 4 * 4;
  return at;
}

}  // namespace

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lk(rng().mu);
  rng().seed = seed;
  rng().offset = 0;
}

uint64_t random_offset() {
  std::lock_guard<std::mutex> lk(rng().mu);
  return rng().offset;
}

Tensor randn(const Shape& s, Device d, float mean, float sd) {
  detail::check_shape("randn", s);
  DeviceContext& c = context(d);
  Tensor y = alloc(s, c);
  const size_t n = count(y);
  const auto [seed, off] = draw(n);
  enqueue(c, "random_normal", {}, {&y}, [=, seed = seed, off = off](Backend& be, const OpArgs& k) {
    be.random_normal(k.out(0), n, seed, off, mean, sd);
  });
  return y;
}

Tensor rand_uniform(const Shape& s, Device d, float lo, float hi) {
  detail::check_shape("rand_uniform", s);
  DeviceContext& c = context(d);
  Tensor y = alloc(s, c);
  const size_t n = count(y);
  const auto [seed, off] = draw(n);
  enqueue(c, "random_uniform", {}, {&y}, [=, seed = seed, off = off](Backend& be, const OpArgs& k) {
    be.random_uniform(k.out(0), n, seed, off, lo, hi);
  });
  return y;
}

}  // namespace amlp
