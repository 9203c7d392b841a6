// Covers framework/ops/op.cpp, framework/core/tensor/tensor.cpp (numel), the creation ops of framework/ops/random.cpp and framework/ops/copy.cpp.
// shapes that do not fit. A negative dimension,
// an element count past int64, a byte count past 64 bits, or a dimension past
// the kernels' int index range raises ShapeError at the call site, naming the
// op and the shape; nothing is queued, nothing is allocated and the random
// stream does not move. (Before: dimensions were cast to int unchecked and
// numel() wrapped, so a huge shape allocated a small block that the kernel
// then wrote past.)
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "test_util.h"

namespace amlp::testing {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kIntMax = std::numeric_limits<int>::max();
constexpr int64_t kBig = int64_t(1) << 31;  // one past the kernels' int range

// What a rejected call must leave as it was.
struct Counts {
  uint64_t pushed, allocs;
  size_t in_use, reserved;
  uint64_t rng;
};
Counts counts(Device d) {
  const MemoryStats m = memory_stats(d);
  return {queue_stats(d).pushed, m.alloc_count, m.bytes_in_use, m.reserved_bytes, random_offset()};
}

// The message of the ShapeError `f` throws on `d`; a failure if it throws
// nothing or something else, or if it queued, allocated or drew anything.
std::string shape_error_of(Device d, const std::function<void()>& f) {
  const Counts before = counts(d);
  std::string msg;
  try {
    f();
    ADD_FAILURE() << "accepted";
  } catch (const ShapeError& e) {
    msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw something else than ShapeError: " << e.what();
  }
  const Counts after = counts(d);
  EXPECT_EQ(after.pushed, before.pushed) << "a rejected call queued work: " << msg;
  EXPECT_EQ(after.allocs, before.allocs) << "a rejected call allocated: " << msg;
  EXPECT_EQ(after.in_use, before.in_use) << msg;
  EXPECT_EQ(after.reserved, before.reserved) << msg;
  EXPECT_EQ(after.rng, before.rng) << "a rejected random op advanced the stream: " << msg;
  return msg;
}

bool has(const std::string& msg, const std::string& part) { return msg.find(part) != std::string::npos; }

TEST(Numel, CountsWhatFitsAndRejectsWhatDoesNot) {
  EXPECT_EQ(numel({}), 1);
  EXPECT_EQ(numel({3, 4}), 12);
  EXPECT_EQ(numel({0, kInt64Max, kInt64Max}), 0);  // a 0 dimension: nothing to hold
  EXPECT_EQ(numel({kInt64Max, kInt64Max, 0}), 0);
  const int64_t most = kInt64Max / 4;  // its byte count is the largest that fits
  EXPECT_EQ(numel({most}), most);
  EXPECT_EQ(numel({1, most, 1}), most);
  for (const Shape& s : std::vector<Shape>{{int64_t(1) << 40, int64_t(1) << 40},
                                           {kInt64Max, 2},
                                           {kInt64Max},        // elements fit, bytes do not
                                           {most + 1},         // the first count whose bytes do not fit
                                           {int64_t(1) << 31, int64_t(1) << 31, 4},
                                           {2, 2, 2, kInt64Max / 2},
                                           {-1},
                                           {3, -2},
                                           {0, -1},
                                           {std::numeric_limits<int64_t>::min(), 1}}) {
    SCOPED_TRACE(shape_str(s));
    try {
      (void)numel(s);
      ADD_FAILURE() << "accepted";
    } catch (const ShapeError& e) {
      EXPECT_TRUE(has(e.what(), shape_str(s))) << e.what();
    }
  }
}

class Shapes : public DeviceTest {};

const std::vector<Shape>& bad_shapes() {
  static const std::vector<Shape> s{{int64_t(1) << 40, int64_t(1) << 40},  // 2^80 elements: wraps to 0
                                    {kInt64Max, 2},                        // wraps to -2
                                    {kInt64Max / 4 + 1},                   // bytes wrap
                                    {int64_t(1) << 62},                    // bytes wrap to 0
                                    {int64_t(1) << 32, int64_t(1) << 32},  // 2^64 elements: wraps to 0
                                    {-1},
                                    {4, -3},
                                    {-2, -2}};  // elements would be positive: still negative dimensions
  return s;
}

TEST_P(Shapes, CreationOpsRejectShapesThatDoNotFit) {
  const Device d = dev();
  const std::vector<float> values(16, 1.f);
  const std::pair<const char*, std::function<Tensor(const Shape&)>> ops[] = {
      {"empty", [&](const Shape& s) { return empty(s, d); }},
      {"full", [&](const Shape& s) { return full(s, 2.f, d); }},
      {"full", [&](const Shape& s) { return zeros(s, d); }},
      {"full", [&](const Shape& s) { return ones(s, d); }},
      {"randn", [&](const Shape& s) { return randn(s, d); }},
      {"rand_uniform", [&](const Shape& s) { return rand_uniform(s, d); }},
      {"from_host", [&](const Shape& s) { return from_host(s, values.data(), d); }},
  };
  for (const auto& [name, op] : ops)
    for (const Shape& s : bad_shapes()) {
      SCOPED_TRACE(std::string(name) + " " + shape_str(s));
      const std::string msg = shape_error_of(d, [&, &op = op] { op(s); });
      EXPECT_EQ(msg.rfind(std::string(name) + ": shape " + shape_str(s), 0), 0u) << msg;
      const bool negative = s[0] < 0 || (s.size() > 1 && s[1] < 0);
      EXPECT_TRUE(has(msg, negative ? "negative dimension" : "more elements than a tensor can hold")) << msg;
    }
  // The same shapes with a 0 dimension hold nothing and are fine.
  EXPECT_EQ(empty({0, int64_t(1) << 40, int64_t(1) << 40}, d).numel(), 0);
  EXPECT_EQ(full({kInt64Max, 0}, 1.f, d).to_host().size(), 0u);
}

TEST_P(Shapes, DimensionsPastTheKernelsIntRangeAreRejectedBeforeAllocating) {
  const Device d = dev();
  // Zero-element operands with one huge dimension: made without memory, they
  // reach each op's int checks (and its output would be huge, or empty).
  Tensor tall = empty({kBig, 0}, d), wide = empty({0, kBig}, d);
  Tensor w10 = empty({1, 0}, d), col = empty({0, 1}, d), row0 = empty({0}, d);
  Tensor tall_label = empty({kBig, 0}, d);
  const std::string big = std::to_string(kBig);
  struct Case {
    const char* op;
    std::function<void()> call;
    std::vector<std::string> named;
  };
  const Case cases[] = {
      {"matmul", [&] { matmul(tall, col); }, {"(2147483648, 0)", "(0, 1)", big}},            // M
      {"matmul", [&] { matmul(w10, wide); }, {"(1, 0)", "(0, 2147483648)", big}},             // N
      {"matmul", [&] { matmul(wide, tall); }, {"(0, 2147483648)", "(2147483648, 0)", big}},   // K = 2^31
      {"matmul", [&] { matmul(wide, wide, true, false); }, {"(0, 2147483648)", big}},         // Mᵀ, N
      {"matmul", [&] { matmul(tall, tall, false, true); }, {"(2147483648, 0)", big}},         // M, Nᵀ
      {"linear", [&] { linear(tall, w10, Tensor()); }, {"(2147483648, 0)", "(1, 0)", big}},   // batch
      {"linear", [&] { linear(w10, tall, Tensor()); }, {"(1, 0)", "(2147483648, 0)", big}},   // out features
      {"bias_add", [&] { bias_add(tall, row0); }, {"(2147483648, 0)", big}},
      {"sum_rows", [&] { sum_rows(wide); }, {"(0, 2147483648)", big}},  // refused before allocating 8 GiB
      {"l2_loss", [&] { l2_loss(tall, tall_label); }, {"(2147483648, 0)", big}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    const std::string msg = shape_error_of(d, c.call);
    EXPECT_EQ(msg.rfind(std::string(c.op) + ": ", 0), 0u) << msg;
    EXPECT_TRUE(has(msg, std::to_string(kIntMax))) << msg;
    for (const std::string& s : c.named) EXPECT_TRUE(has(msg, s)) << "does not name " << s << ": " << msg;
  }
}

TEST_P(Shapes, AnOutputWhoseCountDoesNotFitIsRejectedBeforeAllocating) {
  const Device d = dev();
  // Each dimension fits in int, but (M, N) holds 2^62 - 2^32 + 1 elements, whose bytes do not fit.
  Tensor a = empty({kIntMax, 0}, d), b = empty({0, kIntMax}, d), w = empty({kIntMax, 0}, d);
  std::string msg = shape_error_of(d, [&] { matmul(a, b); });
  EXPECT_EQ(msg.rfind("matmul: shape (2147483647, 2147483647)", 0), 0u) << msg;
  msg = shape_error_of(d, [&] { linear(a, w, Tensor()); });
  EXPECT_EQ(msg.rfind("linear: shape (2147483647, 2147483647)", 0), 0u) << msg;
}

TEST_P(Shapes, ShapesThatFitStillWork) {
  const Device d = dev();
  // Zero-element edge cases at the int limit run and give empty results.
  Tensor y = matmul(empty({0, kIntMax}, d), empty({kIntMax, 0}, d));  // K = INT_MAX, (0, 0)
  EXPECT_EQ(y.shape(), (Shape{0, 0}));
  EXPECT_EQ(sum_rows(empty({4, 0}, d)).to_host().size(), 0u);
  EXPECT_EQ(matmul(ones({2, 3}, d), ones({3, 4}, d)).to_host(), std::vector<float>(8, 3.f));
}

INSTANTIATE_TEST_SUITE_P(Devices, Shapes, ::testing::ValuesIn(test_devices()), device_name);

}  // namespace
}  // namespace amlp::testing
