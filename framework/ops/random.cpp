// random.cpp — randn and rand_uniform from one global Philox4x32-10 stream:
// each op draws at the current (seed, offset) and advances it, so a seed
// fixes every number on every backend. Kernels: cpu/random.cpp, cuda/random.cpp (cuRAND).
#include <cmath>
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

void manual_seed(uint64_t seed, uint64_t offset) {
  std::lock_guard<std::mutex> lk(rng().mu);
  rng().seed = seed;
  rng().offset = offset;
}

uint64_t random_seed() {
  std::lock_guard<std::mutex> lk(rng().mu);
  return rng().seed;
}

uint64_t random_offset() {
  std::lock_guard<std::mutex> lk(rng().mu);
  return rng().offset;
}

// One draw of numel(s) numbers at the stream's current (seed, offset):
// `fill` reads them as scalars 0 (n), 1 (seed), 2 (offset), then `params`.
static Tensor random_op(const char* op, const char* kernel, const Shape& s, Device d, std::vector<uint64_t> params,
                        detail::OpKernel fill) {
  detail::check_shape(op, s);
  DeviceContext& c = context(d);
  Tensor y = alloc(s, c);
  const size_t n = count(y);
  const auto [seed, off] = draw(n);
  OpScalars scalars{n, seed, off};  // and `fill`'s own: params
  for (uint64_t p : params) scalars.push_back(p);
  enqueue(c, kernel, {}, {&y}, std::move(scalars), fill);
  return y;
}

Tensor randn(const Shape& s, Device d, float mean, float sd) {
  if (!std::isfinite(mean) || !std::isfinite(sd) || sd < 0.f)
    throw ShapeError(detail::concat("randn: the mean and the standard deviation must be finite and the deviation >= 0, got mean ",
                                    mean, ", deviation ", sd));
  return random_op("randn", "random_normal", s, d, {scalar_bits(mean), scalar_bits(sd)},
                   [](Backend& be, const OpArgs& k) {
                     be.kernels.random_normal(be, k.out(0), k.scalar(0), k.scalar(1), k.scalar(2), k.scalar_float(3),
                                      k.scalar_float(4));
                   });
}

Tensor rand_uniform(const Shape& s, Device d, float lo, float hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi)
    throw ShapeError(detail::concat("rand_uniform: the bounds must be finite with low <= high, got [", lo, ", ", hi, ")"));
  return random_op("rand_uniform", "random_uniform", s, d, {scalar_bits(lo), scalar_bits(hi)},
                   [](Backend& be, const OpArgs& k) {
                     be.kernels.random_uniform(be, k.out(0), k.scalar(0), k.scalar(1), k.scalar(2), k.scalar_float(3),
                                       k.scalar_float(4));
                   });
}

}  // namespace amlp
