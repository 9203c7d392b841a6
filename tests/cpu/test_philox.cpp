// Covers framework/cpu/philox.cpp, framework/cpu/philox_avx2.cpp, framework/cpu/philox_avx512.cpp.
// the CPU backend's Philox4x32-10 stream (framework/cpu/philox.h):
// against cuRAND's host generator (uniforms bitwise, normals within the bound
// tests/cuda/test_cuda_backend.cpp states for host vs device), every ISA
// against the scalar code, and any split of a draw (across fill calls, or
// the backend's two cores) against one fill.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "framework/asyncmlp.h"
#include "framework/cpu/philox.h"
#include "sanitized.h"

#if ASYNCMLP_HAVE_CURAND
#include <curand.h>
#endif

namespace {

using amlp::philox::Isa;

constexpr Isa kIsas[] = {Isa::Scalar, Isa::Avx2, Isa::Avx512};  // one the CPU lacks runs as the best it has

const uint64_t kSeeds[] = {0, 2024, 0xDEADBEEFCAFEF00Dull};
// Unaligned offsets, a 65536-block step boundary (position 2^18), a 2^40 step, and
// a carry from ctr.x into ctr.y (step 2^32 at position 2^50).
const uint64_t kOffsets[] = {0, 1, 2, 3, 4, 5, 31, 33, (uint64_t(1) << 18) - 3, (uint64_t(1) << 40) + 7,
                             (uint64_t(1) << 50) - 37};
// The largest, many vector blocks past any boundary: 100001, or 4097 under
// ThreadSanitizer, which has nothing to watch in these one-thread fills.
const size_t kCounts[] = {1, 2, 3, 7, 31, 33, 1000, amlp::kThreadSanitized ? 4097 : 100001};

std::string first_bitwise_mismatch(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return "sizes " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0)
      return "at " + std::to_string(i) + ": " + std::to_string(got[i]) + " vs " + std::to_string(want[i]);
  return "";
}

// The stated bound for normals: |a - b| <= 1e-5·stddev + 2 ulp of b. Returns the count
// outside it; max_abs gets the largest difference.
size_t normals_outside_bound(const std::vector<float>& got, const std::vector<float>& want, float stddev,
                             double* max_abs) {
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(double(got[i]) - double(want[i]));
    const double ulp = std::fabs(std::nextafter(want[i], INFINITY) - want[i]);
    *max_abs = std::max(*max_abs, d);
    if (!(d <= 1e-5 * stddev + 2 * ulp)) ++bad;
  }
  return bad;
}

std::string sci(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

std::string where(Isa isa, uint64_t seed, uint64_t off, size_t n) {
  return std::string(amlp::philox::isa_name(isa)) + " seed " + std::to_string(seed) + " offset " +
         std::to_string(off) + " n " + std::to_string(n);
}

#if ASYNCMLP_HAVE_CURAND

class CuRandHost : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(curandCreateGeneratorHost(&gen_, CURAND_RNG_PSEUDO_PHILOX4_32_10), CURAND_STATUS_SUCCESS);
  }
  void TearDown() override {
    if (gen_) curandDestroyGenerator(gen_);
  }
  void at(uint64_t seed, uint64_t offset) {
    ASSERT_EQ(curandSetPseudoRandomGeneratorSeed(gen_, seed), CURAND_STATUS_SUCCESS);
    ASSERT_EQ(curandSetGeneratorOffset(gen_, offset), CURAND_STATUS_SUCCESS);
  }
  std::vector<float> uniform(uint64_t seed, uint64_t offset, size_t n) {
    at(seed, offset);
    std::vector<float> y(n);
    EXPECT_EQ(curandGenerateUniform(gen_, y.data(), n), CURAND_STATUS_SUCCESS);
    return y;
  }
  // cuRAND draws normals in pairs: an odd count is the even one cut short.
  std::vector<float> normal(uint64_t seed, uint64_t offset, size_t n, float mean, float sd) {
    at(seed, offset);
    std::vector<float> y(n + n % 2);
    EXPECT_EQ(curandGenerateNormal(gen_, y.data(), y.size(), mean, sd), CURAND_STATUS_SUCCESS);
    y.resize(n);
    return y;
  }
  curandGenerator_t gen_ = nullptr;
};

// One cuRAND call per seed and offset serves every count and ISA (the host
// generator costs ~15 ms a call): a count's numbers are the first n of the
// largest count's, as a counter-based generator's are (position off + i
// alone gives number i), which the smaller counts' cases then check of ours.
const size_t kMaxCount = *std::max_element(std::begin(kCounts), std::end(kCounts));
std::vector<float> first(const std::vector<float>& all, size_t n) { return {all.begin(), all.begin() + n}; }

TEST_F(CuRandHost, UniformsAreBitwiseEqual) {
  for (uint64_t seed : kSeeds)
    for (uint64_t off : kOffsets) {
      const std::vector<float> all = uniform(seed, off, kMaxCount);
      for (size_t n : kCounts) {
        const std::vector<float> want = first(all, n);
        for (Isa isa : kIsas) {
          std::vector<float> got(n), scaled(n);
          amlp::philox::fill_uniform(got.data(), seed, off, off + n, 0.f, 1.f, isa);
          ASSERT_EQ(first_bitwise_mismatch(got, want), "") << where(isa, seed, off, n);
          // [lo, hi) as the backends scale it: lo + (hi - lo)·u, one rounding each.
          const float lo = -0.07f, hi = 0.07f, w = hi - lo;
          amlp::philox::fill_uniform(scaled.data(), seed, off, off + n, lo, hi, isa);
          for (float& u : got) u = lo + w * u;
          ASSERT_EQ(first_bitwise_mismatch(scaled, got), "") << where(isa, seed, off, n) << " U[-0.07, 0.07)";
        }
      }
    }
}

TEST_F(CuRandHost, NormalsAreWithinTheBoundAndBitwiseOnTheScalarPath) {
  const float mean = 0.5f, sd = 2.f;
  constexpr int kN = std::size(kIsas);
  double max_abs[kN] = {};
  size_t differ[kN] = {}, total = 0;
  for (uint64_t seed : kSeeds)
    for (uint64_t off : kOffsets) {
      const std::vector<float> all = normal(seed, off, kMaxCount, mean, sd);
      for (size_t n : kCounts) {
        const std::vector<float> want = first(all, n);
        total += n;
        for (int k = 0; k < kN; ++k) {
          const Isa isa = kIsas[k];
          std::vector<float> got(n);
          amlp::philox::fill_normal(got.data(), seed, off, off + n, mean, sd, isa);
          ASSERT_EQ(normals_outside_bound(got, want, sd, &max_abs[k]), 0u)
              << where(isa, seed, off, n) << ": bound |diff| <= 1e-5*stddev + 2 ulp";
          for (size_t i = 0; i < n; ++i) differ[k] += std::memcmp(&got[i], &want[i], sizeof(float)) != 0;
        }
      }
    }
  for (int k = 0; k < kN; ++k) {
    const std::string verdict = std::string(amlp::philox::isa_name(kIsas[k])) + ": " + std::to_string(differ[k]) +
                                " of " + std::to_string(total) + " normals differ from cuRAND's host generator, max |diff| " +
                                sci(max_abs[k]) + " (stddev 2)";
    std::cout << "[   INFO   ] " << verdict << "\n";
    RecordProperty(std::string("normals_") + amlp::philox::isa_name(kIsas[k]), verdict);
  }
  // The scalar path is cuRAND's host code with the same libm calls.
  EXPECT_EQ(differ[0], 0u) << "scalar normals are not bitwise cuRAND's host generator's";
}

// The public ops on cpu:0 (vectorised, two cores above the split size) draw cuRAND's numbers.
TEST_F(CuRandHost, TheCpuBackendDrawsCuRandsStream) {
  const int64_t n = 1024 * 512;
  amlp::manual_seed(99);
  amlp::Tensor skip = amlp::rand_uniform({5}, amlp::Device::cpu(0));  // offset 8
  const std::vector<float> u = amlp::rand_uniform({n}, amlp::Device::cpu(0)).to_host();
  EXPECT_EQ(first_bitwise_mismatch(u, uniform(99, 8, n)), "");
  const std::vector<float> z = amlp::randn({n + 1}, amlp::Device::cpu(0), 0.5f, 2.f).to_host();
  double max_abs = 0;
  EXPECT_EQ(normals_outside_bound(z, normal(99, 8 + n, n + 1, 0.5f, 2.f), 2.f, &max_abs), 0u);
}

#else

TEST(CuRandHost, Skipped) { GTEST_SKIP() << "built without cuRAND: nothing to compare the CPU generator with"; }

#endif  // ASYNCMLP_HAVE_CURAND

// Without cuRAND too: the vector code against the scalar code (uniforms bitwise,
// normals within the bound), and AVX2 against AVX-512 (bitwise: the same operations).
TEST(Philox, EveryIsaMatchesTheScalarCode) {
  const Isa best = amlp::philox::best_isa();
  std::cout << "[   INFO   ] this CPU runs " << amlp::philox::isa_name(best) << "\n";
  double max_abs = 0;
  for (uint64_t seed : kSeeds)
    for (uint64_t off : kOffsets)
      for (size_t n : kCounts) {
        std::vector<float> su(n), sz(n), avx2_z(n);
        amlp::philox::fill_uniform(su.data(), seed, off, off + n, -1.f, 3.f, Isa::Scalar);
        amlp::philox::fill_normal(sz.data(), seed, off, off + n, 1.5f, 3.f, Isa::Scalar);
        amlp::philox::fill_normal(avx2_z.data(), seed, off, off + n, 1.5f, 3.f, Isa::Avx2);
        for (Isa isa : {Isa::Avx2, Isa::Avx512}) {
          std::vector<float> u(n), z(n);
          amlp::philox::fill_uniform(u.data(), seed, off, off + n, -1.f, 3.f, isa);
          amlp::philox::fill_normal(z.data(), seed, off, off + n, 1.5f, 3.f, isa);
          ASSERT_EQ(first_bitwise_mismatch(u, su), "") << where(isa, seed, off, n);
          ASSERT_EQ(normals_outside_bound(z, sz, 3.f, &max_abs), 0u) << where(isa, seed, off, n);
          if (isa == Isa::Avx512 && best == Isa::Avx512)
            ASSERT_EQ(first_bitwise_mismatch(z, avx2_z), "") << where(isa, seed, off, n) << " vs avx2";
        }
      }
  std::cout << "[   INFO   ] normals: max |vector - scalar| = " << max_abs << " (stddev 3)\n";
}

// A draw cut anywhere (unaligned pieces, lengths 1 .. 100) is the draw in one piece.
TEST(Philox, AnySplitOfADrawGivesTheSameNumbers) {
  const uint64_t seed = 31337;
  for (uint64_t off : {uint64_t(0), uint64_t(3), (uint64_t(1) << 18) - 45}) {
    const size_t n = 20000;
    for (Isa isa : kIsas) {
      std::vector<float> whole_u(n), whole_z(n), cut_u(n), cut_z(n);
      amlp::philox::fill_uniform(whole_u.data(), seed, off, off + n, 0.f, 1.f, isa);
      amlp::philox::fill_normal(whole_z.data(), seed, off, off + n, 0.f, 1.f, isa);
      size_t len = 1;
      for (size_t i = 0; i < n; i += len, len = len % 100 + 1) {
        const size_t e = std::min(n, i + len);
        amlp::philox::fill_uniform(cut_u.data() + i, seed, off + i, off + e, 0.f, 1.f, isa);
        amlp::philox::fill_normal(cut_z.data() + i, seed, off + i, off + e, 0.f, 1.f, isa);
      }
      EXPECT_EQ(first_bitwise_mismatch(cut_u, whole_u), "") << where(isa, seed, off, n);
      EXPECT_EQ(first_bitwise_mismatch(cut_z, whole_z), "") << where(isa, seed, off, n);
    }
  }
}

// The backend splits large draws over two cores: bitwise one single-threaded fill,
// for sizes below, at and above the split, odd ones included, at an unaligned-in-chunk offset.
TEST(Philox, TheTwoCoreBackendDrawEqualsOneFill) {
  const amlp::Device cpu = amlp::Device::cpu(0);
  for (int64_t n : {int64_t(1000), int64_t(32768), int64_t(32769), int64_t(1024) * 512, int64_t(1000003)}) {
    amlp::manual_seed(4242);
    amlp::Tensor skip = amlp::randn({9}, cpu);  // offset 12: not a multiple of 32
    const uint64_t off = amlp::random_offset();
    const std::vector<float> z = amlp::randn({n}, cpu, -1.f, 0.25f).to_host();
    const std::vector<float> u = amlp::rand_uniform({n}, cpu, 2.f, 5.f).to_host();
    const uint64_t off_u = off + uint64_t(n + 3) / 4 * 4;
    std::vector<float> want_z(n), want_u(n);
    amlp::philox::fill_normal(want_z.data(), 4242, off, off + n, -1.f, 0.25f);
    amlp::philox::fill_uniform(want_u.data(), 4242, off_u, off_u + n, 2.f, 5.f);
    EXPECT_EQ(first_bitwise_mismatch(z, want_z), "") << "normals, n = " << n;
    EXPECT_EQ(first_bitwise_mismatch(u, want_u), "") << "uniforms, n = " << n;
  }
}

}  // namespace
