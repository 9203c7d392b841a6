// Covers framework/util/env.cpp (ASYNCMLP_CANDIDATES), framework/cpu/elementwise.cpp
// (relu_backward_outer_sum_rows), framework/core/backend/kernels.h (the composition that takes it).
// The GPU kernel candidates (docs/gpu.md, "Candidates"): each is off by
// default, and on the CPU gives the default's numbers bit for bit; the CUDA
// side of each is checked against the CPU by test_cuda's cases with the
// candidates on (the GPU kit runs them).
#include <cstring>
#include <random>
#include <vector>

#include "framework/core/backend/backend.h"
#include "framework/core/context.h"
#include "framework/runtime.h"
#include "framework/util/env.h"
#include "test_util.h"

namespace amlp::testing {
namespace {

EnvSettings parse(const char* candidates) {
  return read_env_settings([&](const char* name) -> const char* {
    return std::strcmp(name, "ASYNCMLP_CANDIDATES") == 0 ? candidates : nullptr;
  });
}

TEST(Candidates, OffUnlessNamedAndAnUnknownNameIsOneLine) {
  EXPECT_EQ(parse(nullptr).candidates, 0u);
  EXPECT_EQ(parse("").candidates, 0u);
  EXPECT_EQ(parse("out_gemv").candidates, unsigned(kCandidateOutGemv));
  EXPECT_EQ(parse("out_grad").candidates, unsigned(kCandidateOutGrad));
  EXPECT_EQ(parse("out_grad,out_gemv").candidates, unsigned(kCandidateOutGemv | kCandidateOutGrad));
  EXPECT_EQ(parse("worker_spin").candidates, unsigned(kCandidateWorkerSpin));
  EXPECT_EQ(parse("all").candidates, unsigned(kCandidateOutGemv | kCandidateOutGrad | kCandidateWorkerSpin));
  EXPECT_EQ(parse("out_gemv").problem, "");
  for (const char* bad : {"bogus", "out_gemv,bogus", "out_gemv,", "OUT_GEMV", " out_gemv"}) {
    const EnvSettings s = parse(bad);
    EXPECT_EQ(s.candidates, 0u) << bad;  // nothing runs under a list nobody meant
    EXPECT_NE(s.problem.find("environment variable ASYNCMLP_CANDIDATES names"), std::string::npos) << s.problem;
    EXPECT_NE(s.problem.find("out_gemv, out_grad, worker_spin, all"), std::string::npos) << s.problem;
    EXPECT_EQ(s.problem.find('\n'), std::string::npos) << s.problem;
  }
  unsigned bits = 0;
  for (const CandidateInfo& c : kCandidates) {
    EXPECT_EQ(bits & c.bit, 0u) << c.name << ": a bit of its own";
    bits |= c.bit;
    // This process's setting is its environment's (unset in the test command: all off).
    EXPECT_EQ(candidate_on(c.bit), (env_settings().candidates & c.bit) != 0) << c.name;
  }
}

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
