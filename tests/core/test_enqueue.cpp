// test_enqueue.cpp — an op is one declaration (framework/core/tensor/enqueue.h): the
// tensors it reads and writes, and its scalars. Its kernel gets their
// addresses when it runs, only those, and the engine keeps exactly those
// alive; a kernel that keeps an address it did not declare reads freed
// (poisoned) memory, which AddressSanitizer reports. The kernel captures
// nothing: what it uses besides its buffers it reads from the scalars the
// op declared, which step graphs compare before replaying it.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <type_traits>

#include "framework/core/tensor/enqueue.h"
#include "sanitized.h"
#include "test_util.h"

namespace amlp::testing {
namespace {

using detail::enqueue;

TEST(OpDeclaration, TheKernelGetsTheDeclaredBuffersWhenItRuns) {
  ScopedBlocking async(false);
  const Device d = Device::cpu(0);
  Tensor a = full({4}, 2.f, d), b = full({4}, 3.f, d);
  Tensor y = empty({4}, d);
  struct Seen {
    const float* a = nullptr;
    const float* b = nullptr;
    float* y = nullptr;
    size_t reads = 0, writes = 0;
  } seen;
  uint64_t seq = 0;
  {
    PausedQueue paused(d);
    seq = enqueue(context(d), "test_add", {&a, &b}, {&y}, {detail::pointer_bits(&seen)},
                  [](Backend&, const OpArgs& args) {
      Seen& s = *args.scalar_ptr<Seen>(0);
      s.a = args.in(0), s.b = args.in(1), s.y = args.out(0);
      s.reads = args.reads(), s.writes = args.writes();
      for (int i = 0; i < 4; ++i) s.y[i] = s.a[i] + s.b[i];
    });
    EXPECT_EQ(seen.y, nullptr) << "the kernel ran before the queue was resumed";
  }
  EXPECT_EQ(y.to_host(), std::vector<float>(4, 5.f));
  EXPECT_EQ(seen.a, storage(a)->data());
  EXPECT_EQ(seen.b, storage(b)->data());
  EXPECT_EQ(seen.y, storage(y)->data());
  EXPECT_EQ(seen.reads, 2u);
  EXPECT_EQ(seen.writes, 1u);
  EXPECT_EQ(writer_seq(y), seq);  // the declared write is tracked
}

// The kernels' own time (QueueStats::kernel_s) counts the ops run while
// the kernel clock is on, inside the queue's busy time; run with it off, a
// kernel adds to the busy time only.
TEST(OpDeclaration, TheKernelClockCountsKernelsQueuedWhileItIsOn) {
  ScopedBlocking async(false);
  const Device d = Device::cpu(0);
  const bool was = kernel_clock();
  Tensor y = empty({4}, d);
  auto napping = [](Backend&, const OpArgs&) { std::this_thread::sleep_for(std::chrono::milliseconds(2)); };
  waitall();
  const QueueStats q0 = queue_stats(d);
  set_kernel_clock(true);
  enqueue(context(d), "test_nap", {}, {&y}, {}, napping);
  waitall();
  const QueueStats q1 = queue_stats(d);
  EXPECT_GE(q1.kernel_s - q0.kernel_s, 0.002);  // it slept that long, at least
  EXPECT_LE(q1.kernel_s - q0.kernel_s, q1.busy_s - q0.busy_s) << "the kernel's time lies inside the op's busy time";
  set_kernel_clock(false);
  enqueue(context(d), "test_nap", {}, {&y}, {}, napping);
  waitall();
  const QueueStats q2 = queue_stats(d);
  EXPECT_EQ(q2.kernel_s, q1.kernel_s);
  EXPECT_GE(q2.busy_s - q1.busy_s, 0.002);
  set_kernel_clock(was);
}

TEST(OpDeclaration, AnUndefinedOptionalTensorReachesTheKernelAsNull) {
  const Device d = Device::cpu(0);
  Tensor a = full({2}, 1.f, d), none, y = empty({2}, d);
  std::atomic<bool> null_seen{false};
  enqueue(context(d), "test_optional", {&a, &none}, {&y}, {detail::pointer_bits(&null_seen)},
          [](Backend&, const OpArgs& args) {
    *args.scalar_ptr<std::atomic<bool>>(0) = args.in(1) == nullptr && args.in(0) != nullptr;
    args.out(0)[0] = args.out(0)[1] = 0.f;
  });
  y.wait_to_read();
  EXPECT_TRUE(null_seen);
}

TEST(OpDeclaration, ABufferNotDeclaredIsAKernelErrorNamingTheOp) {
  ScopedBlocking async(false);
  const Device d = Device::cpu(0);
  Tensor a = full({2}, 1.f, d), y = empty({2}, d);
  std::atomic<bool> reached{false};
  const uint64_t seq = enqueue(context(d), "test_overreach", {&a}, {&y}, {detail::pointer_bits(&reached)},
                               [](Backend&, const OpArgs& args) {
    (void)args.in(1);  // declared one read
    *args.scalar_ptr<std::atomic<bool>>(0) = true;
  });
  try {
    y.wait_to_read();
    ADD_FAILURE() << "reading an undeclared buffer did not fail";
  } catch (const KernelError& e) {
    EXPECT_EQ(e.op, "test_overreach");
    EXPECT_EQ(e.seq, seq);
    EXPECT_NE(std::string(e.what()).find("read #1 but declared 1"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(reached);
  // The same for a write.
  enqueue(context(d), "test_overreach_write", {&a}, {&y}, {}, [](Backend&, const OpArgs& args) { (void)args.out(1); });
  EXPECT_THROW(y.wait_to_read(), KernelError);
  expect_no_kernel_error_left();
}

TEST(OpDeclaration, DeclaredBuffersOutliveTheirTensorsUntilTheKernelRan) {
  ScopedBlocking async(false);
  const Device d = Device::cpu(0);
  Tensor y = empty({1024}, d);
  std::weak_ptr<Storage> in_storage;
  {
    PausedQueue paused(d);
    Tensor x = full({1024}, 7.f, d);
    in_storage = storage(x);
    enqueue(context(d), "test_copy", {&x}, {&y}, {}, [](Backend&, const OpArgs& args) {
      for (int i = 0; i < 1024; ++i) args.out(0)[i] = args.in(0)[i];
    });
    x = Tensor();  // the frontend lets go; the queued op still holds the buffer
    EXPECT_FALSE(in_storage.expired());
  }
  EXPECT_EQ(y.to_host(), std::vector<float>(1024, 7.f));
  waitall();
  EXPECT_TRUE(in_storage.expired()) << "the op kept its input alive after it ran";
}

// A kernel is a function of its op's description (docs/design.md §1): a
// lambda that captures does not convert to one, and no enqueue() takes a
// kernel without the op's scalars.
template <class K, class = void>
struct EnqueuesWithScalars : std::false_type {};
template <class K>
struct EnqueuesWithScalars<K, std::void_t<decltype(enqueue(std::declval<DeviceContext&>(), "op", {}, {},
                                                            std::vector<uint64_t>{}, std::declval<K>()))>>
    : std::true_type {};
template <class K, class = void>
struct EnqueuesWithoutScalars : std::false_type {};
template <class K>
struct EnqueuesWithoutScalars<K, std::void_t<decltype(enqueue(std::declval<DeviceContext&>(), "op", {}, {},
                                                               std::declval<K>()))>> : std::true_type {};

TEST(OpDeclaration, AKernelCapturesNothing) {
  int n = 4;
  auto by_value = [n](Backend&, const OpArgs&) { (void)n; };
  auto by_reference = [&n](Backend&, const OpArgs&) { ++n; };
  auto captureless = [](Backend&, const OpArgs& k) { (void)k.scalar(0); };
  static_assert(!std::is_convertible_v<decltype(by_value), detail::OpKernel>, "a capture is not a kernel");
  static_assert(!std::is_convertible_v<decltype(by_reference), detail::OpKernel>, "a capture is not a kernel");
  static_assert(!std::is_convertible_v<std::function<void(Backend&, const OpArgs&)>, detail::OpKernel>,
                "a closure is not a kernel");
  static_assert(std::is_convertible_v<decltype(captureless), detail::OpKernel>, "a plain function is");
  static_assert(!EnqueuesWithScalars<decltype(by_value)>::value, "enqueue() takes no capturing lambda");
  static_assert(!EnqueuesWithScalars<decltype(by_reference)>::value, "enqueue() takes no capturing lambda");
  static_assert(EnqueuesWithScalars<decltype(captureless)>::value, "enqueue() takes a plain kernel");
  static_assert(!EnqueuesWithoutScalars<decltype(captureless)>::value, "every op declares its scalars");
  (void)by_value, (void)by_reference, (void)captureless;
}

TEST(OpDeclaration, ScalarAccessorsReadBackWhatWasDeclared) {
  uint32_t nan_bits = 0x7fc12345u;  // a quiet NaN with a payload
  float nan;
  std::memcpy(&nan, &nan_bits, sizeof nan);
  const float floats[] = {0.f, -0.f, 1.5f, -3.25e-7f, std::numeric_limits<float>::denorm_min(),
                          std::numeric_limits<float>::max(), std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(), nan};
  std::vector<uint64_t> scalars;
  for (float f : floats) scalars.push_back(detail::scalar_bits(f));
  const size_t n_floats = scalars.size();
  int x = 7;
  scalars.push_back(static_cast<uint64_t>(int64_t{-3}));  // as ops::dims declares a negative int
  scalars.push_back(true);
  scalars.push_back(0);
  scalars.push_back(detail::pointer_bits(&x));
  scalars.push_back(~uint64_t(0));
  const OpScalars declared(scalars);  // more than OpScalars keeps inline: on the heap
  ASSERT_GT(scalars.size(), OpScalars::kInline);
  const OpArgs k(nullptr, 0, 0, "test_scalars", &declared);
  ASSERT_EQ(k.scalars(), scalars.size());
  for (size_t i = 0; i < n_floats; ++i) {
    const float back = k.scalar_float(i);
    uint32_t a, b;
    std::memcpy(&a, &floats[i], sizeof a);
    std::memcpy(&b, &back, sizeof b);
    EXPECT_EQ(a, b) << "float #" << i << " did not round-trip bitwise";
  }
  EXPECT_TRUE(std::signbit(k.scalar_float(1)));
  EXPECT_TRUE(std::isnan(k.scalar_float(n_floats - 1)));
  EXPECT_EQ(k.scalar_int(n_floats), -3);
  EXPECT_TRUE(k.scalar_bool(n_floats + 1));
  EXPECT_FALSE(k.scalar_bool(n_floats + 2));
  EXPECT_EQ(k.scalar_ptr<int>(n_floats + 3), &x);
  EXPECT_EQ(k.scalar(n_floats + 4), ~uint64_t(0));
  try {
    (void)k.scalar(scalars.size());
    ADD_FAILURE() << "a scalar past those declared was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'test_scalars' asked for scalar #" + std::to_string(scalars.size()) +
                                         " but declared " + std::to_string(scalars.size())),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)OpArgs(nullptr, 0, 0, "test_none").scalar(0), Error);
}

// Scalars up to OpScalars::kInline are kept in the op, more on the heap;
// either way they read back in order, and clearing forgets them.
TEST(OpDeclaration, ScalarsReadBackInlineOrOnTheHeap) {
  for (size_t n : {size_t(0), size_t(1), OpScalars::kInline, OpScalars::kInline + 1, size_t(40)}) {
    std::vector<uint64_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = 1000 + i * 7;
    OpScalars s(v);
    ASSERT_EQ(s.size(), n);
    EXPECT_EQ(std::vector<uint64_t>(s.begin(), s.end()), v) << n << " scalars";
    OpScalars pushed;
    for (uint64_t x : v) pushed.push_back(x);
    ASSERT_EQ(pushed.size(), n);
    EXPECT_EQ(std::vector<uint64_t>(pushed.begin(), pushed.end()), v) << n << " scalars, pushed one by one";
    const OpScalars moved(std::move(s));
    EXPECT_EQ(std::vector<uint64_t>(moved.begin(), moved.end()), v) << n << " scalars, moved";
    OpScalars cleared(v);
    cleared.clear();
    EXPECT_TRUE(cleared.empty());
  }
  const OpScalars listed{5, 6, 7};
  EXPECT_EQ(std::vector<uint64_t>(listed.begin(), listed.end()), (std::vector<uint64_t>{5, 6, 7}));
}

// An op's buffers up to OpRefs::kInline are kept in the op, more on the heap;
// either way in the order declared, each held until the refs are cleared.
// Host memory from malloc, for a pool of the test's own.
struct MallocAllocator : RawAllocator {
  void* raw_alloc(size_t bytes) override { return std::malloc(bytes); }
  void raw_free(void* p) noexcept override { std::free(p); }
};

TEST(OpDeclaration, RefsKeepTheirOrderInlineOrOnTheHeap) {
  Pool pool("test", std::make_unique<MallocAllocator>());
  for (size_t n : {size_t(0), size_t(1), OpRefs::kInline, OpRefs::kInline + 1, size_t(9)}) {
    std::vector<std::shared_ptr<Storage>> made;
    OpRefs refs;
    for (size_t i = 0; i < n; ++i) {
      made.push_back(i == 2 ? nullptr : pool.allocate(64));  // an undefined optional tensor among them
      refs.push_back(made.back());
    }
    ASSERT_EQ(refs.size(), n);
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(refs[i], made[i]) << i << " of " << n;
    OpRefs moved(std::move(refs));
    EXPECT_TRUE(refs.empty());
    ASSERT_EQ(moved.size(), n);
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(moved[i], made[i]) << i << " of " << n << ", moved";
    for (const auto& m : made) if (m) EXPECT_EQ(m.use_count(), 2) << "held by made and the refs";
    moved.clear();
    for (const auto& m : made) if (m) EXPECT_EQ(m.use_count(), 1) << "cleared refs hold nothing";
    const OpRefs from_vector{std::vector<std::shared_ptr<Storage>>(made)};
    EXPECT_EQ(from_vector.size(), n);
  }
}

TEST(OpDeclaration, APayloadIsReadAsTheTypeItWasDeclaredWith) {
  const OpPayload p = detail::payload(std::string("what"));
  const OpArgs k(nullptr, 0, 0, "test_payload", nullptr, &p);
  EXPECT_EQ(k.payload<std::string>(), "what");
  EXPECT_THROW((void)k.payload<std::vector<float>>(), Error);
  EXPECT_THROW((void)OpArgs(nullptr, 0, 0, "test_none").payload<std::string>(), Error);
}

// The kernel's sizes and values come from the scalars the op declared.
void fill_kernel(Backend&, const OpArgs& k) {
  for (size_t i = 0; i < k.scalar(0); ++i) k.out(0)[i] = k.scalar_float(1);
}

TEST(OpDeclaration, AStepWhoseScalarsChangedIsRecordedAgainNotReplayed) {
  ScopedBlocking async(false);
  const Device d = Device::cpu(0);
  Tensor y = empty({8}, d);  // one buffer every step: only the scalars change
  StepGraphStats stats;
  {
    ScopedStepGraph on({d}, stats);
    // eager, eager, capture (slot 0), replay, capture (slot 1), replay,
    // update (slot 0, the least recently launched), replay
    const float values[] = {1.f, 1.f, 1.f, 1.f, 2.f, 2.f, 3.f, 3.f};
    for (float v : values) {
      begin_step(d);
      enqueue(context(d), "test_fill", {}, {&y}, {4, detail::scalar_bits(v)}, fill_kernel);
      end_step(d);
      const std::vector<float> got = y.to_host();
      EXPECT_EQ(std::vector<float>(got.begin(), got.begin() + 4), std::vector<float>(4, v));
    }
  }
  EXPECT_EQ(stats.eager, 2u);
  EXPECT_EQ(stats.captured, 2u) << "a step whose scalars changed was replayed as recorded";
  EXPECT_EQ(stats.replayed, 3u);
  EXPECT_EQ(stats.updated, 1u) << "a step whose scalars changed was replayed as recorded";
}

TEST(OpDeclaration, AnOpWithAPayloadIsNeverRecorded) {
  ScopedBlocking async(false);
  const Device d = Device::cpu(0);
  Tensor y = empty({4}, d);
  StepGraphStats stats;
  {
    ScopedStepGraph on({d}, stats);
    for (int step = 0; step < 5; ++step) {
      begin_step(d);
      // Declared recordable (a bare name); the payload, which the recogniser
      // cannot compare, differs every step.
      enqueue(context(d), "test_from_payload", {}, {&y}, {4},
              detail::payload(std::vector<float>(4, static_cast<float>(step))), [](Backend&, const OpArgs& k) {
        for (size_t i = 0; i < k.scalar(0); ++i) k.out(0)[i] = k.payload<std::vector<float>>()[i];
      });
      end_step(d);
      EXPECT_EQ(y.to_host(), std::vector<float>(4, static_cast<float>(step)));
    }
  }
  EXPECT_EQ(stats.captured, 0u);
  EXPECT_EQ(stats.replayed, 0u);
  EXPECT_EQ(stats.updated, 0u);
}

#if AMLP_ASAN
// The bug the declaration rules out: a kernel that captured a buffer's
// address instead of declaring it. Once the frontend drops the tensor, the
// block goes back to the pool's cache, poisoned, and the late read is a
// use-after-poison that ASan reports (the process dies).
void kernel_with_a_stale_pointer() {
  const Device d = Device::cpu(0);
  Tensor y = empty({256}, d);
  {
    PausedQueue paused(d);
    Tensor x = full({256}, 1.f, d);
    const float* captured = static_cast<const float*>(storage(x)->data());  // not declared
    enqueue(context(d), "test_stale", {}, {&y}, {detail::pointer_bits(captured)}, [](Backend&, const OpArgs& args) {
      for (int i = 0; i < 256; ++i) args.out(0)[i] = args.scalar_ptr<const float>(0)[i];
    });
    x = Tensor();
  }
  y.wait_to_read();
}

void kernel_that_declares_its_input() {
  const Device d = Device::cpu(0);
  Tensor y = empty({256}, d);
  {
    PausedQueue paused(d);
    Tensor x = full({256}, 1.f, d);
    enqueue(context(d), "test_declared", {&x}, {&y}, {}, [](Backend&, const OpArgs& args) {
      for (int i = 0; i < 256; ++i) args.out(0)[i] = args.in(0)[i];
    });
    x = Tensor();
  }
  y.wait_to_read();
  if (y.to_host() != std::vector<float>(256, 1.f)) std::exit(3);
  std::exit(0);
}

TEST(OpDeclarationDeathTest, AStalePointerIsCaughtAndADeclaredOneIsNot) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(kernel_with_a_stale_pointer(), "use-after-poison");
  EXPECT_EXIT(kernel_that_declares_its_input(), ::testing::ExitedWithCode(0), "");
}
#else
TEST(OpDeclarationDeathTest, AStalePointerIsCaughtAndADeclaredOneIsNot) {
  GTEST_SKIP() << "needs AddressSanitizer (the ASan build of tools/test.sh runs it)";
}
#endif

}  // namespace
}  // namespace amlp::testing
