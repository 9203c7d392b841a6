// Covers framework/cpu/linalg.cpp (the CPU's TF32 emulation) and the loss's
// response to TF32 that docs/gpu.md reports from the GPU: TF32's rounding,
// a CPU GEMM that reads rounded inputs with TF32 on, and the d2l MLP's loss
// trajectory under TF32 within a bound reasoned below.
#include <cmath>
#include <limits>

#include "framework/cpu/cpu_backend.h"
#include "models/mlp.h"
#include "sanitized.h"
#include "test_util.h"

namespace amlp::testing {
namespace {

constexpr double kU = 1.0 / 2048;  // TF32's unit roundoff: 10 mantissa bits, rounded to nearest: 2^-11

// TF32 on for the guard's lifetime; the CPU's GEMM reads tf32() as it runs
// on the worker, so everything queued under the guard is waited for before
// it switches back.
class ScopedTf32 {
 public:
  explicit ScopedTf32(bool on) : prev_(tf32()) { set_tf32(on); }
  ~ScopedTf32() {
    waitall();
    set_tf32(prev_);
  }
  ScopedTf32(const ScopedTf32&) = delete;
  ScopedTf32& operator=(const ScopedTf32&) = delete;

 private:
  bool prev_;
};

TEST(Tf32, RoundingKeepsTenMantissaBitsToNearestTiesToEven) {
  const float ulp = std::ldexp(1.f, -10);  // TF32's spacing in [1, 2)
  EXPECT_EQ(cpu::round_to_tf32(1.f), 1.f);
  EXPECT_EQ(cpu::round_to_tf32(1.f + ulp), 1.f + ulp) << "a TF32 value stays";
  EXPECT_EQ(cpu::round_to_tf32(1.f + ulp / 4), 1.f) << "below half a unit: down";
  EXPECT_EQ(cpu::round_to_tf32(1.f + ulp * 3 / 4), 1.f + ulp) << "above half a unit: up";
  EXPECT_EQ(cpu::round_to_tf32(1.f + ulp / 2), 1.f) << "a tie goes to the even neighbour (1)";
  EXPECT_EQ(cpu::round_to_tf32(1.f + ulp * 3 / 2), 1.f + 2 * ulp) << "a tie goes to the even neighbour (1 + 2 ulp)";
  EXPECT_EQ(cpu::round_to_tf32(-(1.f + ulp * 3 / 4)), -(1.f + ulp)) << "the sign is kept";
  EXPECT_EQ(cpu::round_to_tf32(2.f - ulp / 4), 2.f) << "a carry into the exponent";
  EXPECT_EQ(cpu::round_to_tf32(std::numeric_limits<float>::max()), std::numeric_limits<float>::infinity())
      << "past TF32's largest value: infinity, as any round to nearest";
  EXPECT_EQ(cpu::round_to_tf32(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(cpu::round_to_tf32(std::numeric_limits<float>::quiet_NaN())));
  for (float v : {0.1f, 3.14159265f, -1e-20f, 6.02e23f}) {
    const float r = cpu::round_to_tf32(v);
    EXPECT_LE(std::fabs(r - v), std::fabs(v) * kU) << v << ": off by at most half a unit";
    EXPECT_EQ(cpu::round_to_tf32(r), r) << v << ": rounding twice changes nothing";
  }
}

// One product that TF32 cannot hold: (1 + 2^-12) * 1 is 1 in TF32, exact in FP32.
TEST(Tf32, TheCpuGemmReadsItsInputsRoundedToTf32) {
  const Device cpu0 = Device::cpu(0);
  const float a = 1.f + std::ldexp(1.f, -12), b = 1.f;
  Tensor A = from_host({1, 1}, &a, cpu0), B = from_host({1, 1}, &b, cpu0);
  float with = 0, without = 0;
  {
    ScopedTf32 on(true);
    with = matmul(A, B).to_host()[0];
  }
  {
    ScopedTf32 off(false);
    without = matmul(A, B).to_host()[0];
  }
  EXPECT_EQ(with, 1.f);
  EXPECT_EQ(without, a);
}

// The d2l MLP (512 -> 2048 -> 512 -> 1), trained twice from the same seed on
// the same batches, FP32 and TF32: the loss at every step within a bound of
// FP32's, and not equal to it (the rounding was applied).
//
// The bound's reasoning. TF32 moves each GEMM input by a relative error of
// at most u = 2^-11, a product by at most 2u. The errors of the K products
// of an output are independent and of either sign, as are the products
// themselves for these random inputs, so an output's error grows with
// sqrt(K) as the output does: relative to it, about u, not K*u. Through
// three layers (a ReLU never amplifies) the prediction p moves by about
// sqrt(3)*u relative, and the loss sum((p - y)^2)/2 by about
// 2 * sqrt(3)*u * |p| / |p - y|: at most ~4x that near the end of these
// steps, where p is within ~25% of the labels (ones). So about 14u at a
// step's parameters. The parameters move by lr times gradients that carry
// the same relative error; a descent that does not diverge (lr 0.005, as
// d2l) keeps the difference of the two trajectories at that order rather
// than compounding it. Hence 16u = 2^-7 at every step, with room for the
// worst of the estimate's factors. Measured here: about 0.9u at the worst
// step, 0.07u at the last; the GPU's TF32 (docs/gpu.md) 0.1-0.6u at the
// last step of 100 or 300.
TEST(Tf32, TheD2lLossTrajectoryStaysWithin16UnitsOfFp32s) {
  const Device cpu0 = Device::cpu(0);
  // The sanitizer builds take the first 20 steps (the loss has halved by then).
  constexpr int kSteps = kSanitized ? 20 : 40, kBatch = 64;
  std::vector<float> losses[2];
  for (int on = 0; on < 2; ++on) {
    ScopedTf32 mode(on != 0);
    manual_seed(11);
    auto net = models::make_mlp(models::LayerSpec{{2048, 512}}, 1);
    {
      NoGradGuard ng;
      (void)(*net)(randn({1, 512}, cpu0));  // the layers take their sizes (and initial weights) here
    }
    SGD sgd(net->parameters(), 0.005f);
    for (int s = 0; s < kSteps; ++s) {
      Tensor x = randn({kBatch, 512}, cpu0), y = ones({kBatch}, cpu0);
      Tensor l = l2_loss((*net)(x), y);
      losses[on].push_back(mean(l).item());
      l.backward();
      sgd.step(kBatch);
    }
  }
  double worst = 0, last = 0;
  for (int s = 0; s < kSteps; ++s) {
    const double rel = std::fabs(double(losses[1][s]) - losses[0][s]) / losses[0][s];
    EXPECT_LE(rel, 16 * kU) << "step " << s << ": FP32 " << losses[0][s] << ", TF32 " << losses[1][s];
    worst = std::max(worst, rel);
    last = rel;
  }
  EXPECT_GT(worst, 0.0) << "TF32's loss equals FP32's at every step: the rounding was not applied";
  EXPECT_LT(losses[0].back(), 0.5f * losses[0].front()) << "the loss falls: a trajectory worth comparing";
  std::cout << "[   INFO   ] TF32 against FP32 over " << kSteps << " steps: worst " << worst / kU << " u, last "
            << last / kU << " u (u = 2^-11)\n";
}

}  // namespace
}  // namespace amlp::testing
