// test_box_muller.cpp — the device's normal transform (cuda/box_muller.h),
// compiled here for the host, against the CPU backend's generator
// (cpu/philox.cpp) bit for bit: the same Philox words give the same normals.
// The GPU form of the same function is checked on a GPU by
// CudaRandom.NormalsAreBitwiseEqualToTheCpuGenerator. Runs on any machine.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "framework/cpu/philox.h"
#include "framework/cuda/box_muller.h"
#include "sanitized.h"

namespace amlp {
namespace {

// Normals [begin, begin + n) of `seed` through the transform, pair by pair.
std::vector<float> transformed(uint64_t seed, uint64_t begin, size_t n, float mean, float sd) {
  std::vector<float> out;
  out.reserve(n);
  for (uint64_t q = begin; q < begin + n; ++q) {
    const philox::Block b = philox::block(seed, q / 4);
    const size_t pair = (q % 4) / 2 * 2;
    float z[2];
    cuda::bm::box_muller_pair(b.v[pair], b.v[pair + 1], mean, sd, z);
    out.push_back(z[q % 2]);
  }
  return out;
}

size_t bitwise_differences(const std::vector<float>& a, const std::vector<float>& b) {
  size_t d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return d;
}

class BoxMuller : public ::testing::TestWithParam<philox::Isa> {
 protected:
  void SetUp() override {
    if (int(GetParam()) > int(philox::best_isa()))
      GTEST_SKIP() << "this CPU has no " << philox::isa_name(GetParam()) << " (it runs "
                   << philox::isa_name(philox::best_isa()) << ")";
  }
};

TEST_P(BoxMuller, TheTransformIsBitwiseTheCpuVectorGenerator) {
  const struct {
    uint64_t seed, begin;
    size_t n;
    float mean, sd;
  } cases[] = {// a million normals, or 2^16 under ThreadSanitizer (one thread: nothing for it to watch)
               {7, 0, size_t(1) << (amlp::kThreadSanitized ? 16 : 20), 0.f, 1.f},
               {99, 4, amlp::kThreadSanitized ? 10003 : 100003, 0.5f, 2.f},
               {0xdeadbeefcafef00dull, (uint64_t(1) << 34) + 6, 65536, -1.f, 0.01f},
               {1, (uint64_t(3) << 16) * 4 - 10, 4096, 0.f, 1.f}};  // across a counter step
  for (const auto& c : cases) {
    SCOPED_TRACE("seed " + std::to_string(c.seed) + " from " + std::to_string(c.begin));
    std::vector<float> cpu(c.n);
    philox::fill_normal(cpu.data(), c.seed, c.begin, c.begin + c.n, c.mean, c.sd, GetParam());
    const std::vector<float> dev = transformed(c.seed, c.begin, c.n, c.mean, c.sd);
    EXPECT_EQ(bitwise_differences(dev, cpu), 0u) << "of " << c.n;
  }
}

// The extremes of u (w0 = 0: u = 2^-33; w0 = ~0: u = 1, ln 1 = 0 exactly)
// give finite normals of the size Box-Muller gives there.
TEST(BoxMullerEdges, ExtremeWordsGiveFiniteNormalsOfTheRightSize) {
  float z[2];
  cuda::bm::box_muller_pair(0u, 0u, 0.f, 1.f, z);  // s = sqrt(66 ln 2) = 6.7637...
  EXPECT_NEAR(z[1], 6.7637, 1e-3);
  EXPECT_NEAR(z[0], 0.f, 1e-6);
  cuda::bm::box_muller_pair(0xffffffffu, 0x40000000u, 0.f, 1.f, z);  // u = 1: s = 0
  EXPECT_EQ(z[0], 0.f);
  EXPECT_EQ(z[1], 0.f);
}

INSTANTIATE_TEST_SUITE_P(Isa, BoxMuller, ::testing::Values(philox::Isa::Avx2, philox::Isa::Avx512),
                         [](const ::testing::TestParamInfo<philox::Isa>& i) {
                           return std::string(philox::isa_name(i.param));
                         });

}  // namespace
}  // namespace amlp
