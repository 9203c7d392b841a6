// Covers framework/cpu/elementwise.cpp (relu_backward_outer_sum_rows) and
// framework/core/backend/kernels.h (the composition that takes it).
// The GPU kernel candidates (docs/gpu.md, "Candidates"; their setting:
// tests/core/test_env.cpp): on the CPU each gives the default's numbers bit for bit; the CUDA
// side of each is checked against the CPU by test_cuda's cases with the
// candidates on (the GPU kit runs them).
#include <cstring>
#include <random>
#include <vector>

#include "framework/core/backend/backend.h"
#include "framework/core/context.h"
#include "framework/runtime.h"
#include "test_util.h"

namespace amlp::testing {
namespace {

// out_grad on the CPU: the outer product formed in the masking pass gives
// the GEMM of K = 1 and relu_backward_sum_rows' bits, the bias gradient too,
// in FP32 and with TF32's rounded inputs.
TEST(Candidates, OutGradIsTheGemmAndTheMaskingPassBitForBit) {
  Backend& be = *context(Device::cpu(0)).backend;
  ASSERT_NE(be.kernels.relu_backward_outer_sum_rows, nullptr);
  std::mt19937 rng(5);
  for (bool t : {false, true})
    for (const auto& [rows, cols] : {std::pair{64, 512}, std::pair{7, 13}, std::pair{1, 1}}) {
      SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols) + (t ? ", TF32" : ""));
      const std::vector<float> y = uniform_values(rng, size_t(rows) * cols, -1.f, 1.f);
      const std::vector<float> g = uniform_values(rng, rows, -3.f, 3.f), w = uniform_values(rng, cols, -3.f, 3.f);
      std::vector<float> dz0(y.size()), db0(cols), dz1(y.size(), 7.f), db1(cols, 7.f), dz2(y.size());
      set_tf32(t);
      be.kernels.gemm(be, false, false, rows, cols, 1, 1.f, g.data(), 1, w.data(), cols, 0.f, dz0.data(), cols);
      be.kernels.relu_backward_sum_rows(be, y.data(), dz0.data(), dz0.data(), db0.data(), rows, cols);
      be.kernels.relu_backward_outer_sum_rows(be, y.data(), g.data(), w.data(), dz1.data(), db1.data(), rows, cols);
      be.kernels.relu_backward_outer_sum_rows(be, y.data(), g.data(), w.data(), dz2.data(), nullptr, rows, cols);
      set_tf32(false);
      EXPECT_EQ(std::memcmp(dz0.data(), dz1.data(), dz0.size() * sizeof(float)), 0);
      EXPECT_EQ(std::memcmp(db0.data(), db1.data(), db0.size() * sizeof(float)), 0);
      EXPECT_EQ(std::memcmp(dz0.data(), dz2.data(), dz0.size() * sizeof(float)), 0);
    }
}

}  // namespace
}  // namespace amlp::testing
