// test_enqueue.cpp — an op is one declaration (framework/core/enqueue.h): the
// tensors it reads and writes. Its kernel gets their addresses when it runs,
// only those, and the engine keeps exactly those alive; a kernel that keeps
// an address it did not declare reads freed (poisoned) memory, which
// AddressSanitizer reports.
#include <atomic>

#include "framework/core/enqueue.h"
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
  const float* seen_a = nullptr;
  const float* seen_b = nullptr;
  float* seen_y = nullptr;
  size_t reads = 0, writes = 0;
  uint64_t seq = 0;
  {
    PausedQueue paused(d);
    seq = enqueue(context(d), "test_add", {&a, &b}, {&y}, [&](Backend&, const OpArgs& args) {
      seen_a = args.in(0), seen_b = args.in(1), seen_y = args.out(0);
      reads = args.reads(), writes = args.writes();
      for (int i = 0; i < 4; ++i) seen_y[i] = seen_a[i] + seen_b[i];
    });
    EXPECT_EQ(seen_y, nullptr) << "the kernel ran before the queue was resumed";
  }
  EXPECT_EQ(y.to_host(), std::vector<float>(4, 5.f));
  EXPECT_EQ(seen_a, storage(a)->data());
  EXPECT_EQ(seen_b, storage(b)->data());
  EXPECT_EQ(seen_y, storage(y)->data());
  EXPECT_EQ(reads, 2u);
  EXPECT_EQ(writes, 1u);
  EXPECT_EQ(writer_seq(y), seq);  // the declared write is tracked
}

TEST(OpDeclaration, AnUndefinedOptionalTensorReachesTheKernelAsNull) {
  const Device d = Device::cpu(0);
  Tensor a = full({2}, 1.f, d), none, y = empty({2}, d);
  std::atomic<bool> null_seen{false};
  enqueue(context(d), "test_optional", {&a, &none}, {&y}, [&](Backend&, const OpArgs& args) {
    null_seen = args.in(1) == nullptr && args.in(0) != nullptr;
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
  const uint64_t seq = enqueue(context(d), "test_overreach", {&a}, {&y}, [&](Backend&, const OpArgs& args) {
    (void)args.in(1);  // declared one read
    reached = true;
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
  enqueue(context(d), "test_overreach_write", {&a}, {&y}, [&](Backend&, const OpArgs& args) { (void)args.out(1); });
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
    enqueue(context(d), "test_copy", {&x}, {&y}, [](Backend&, const OpArgs& args) {
      for (int i = 0; i < 1024; ++i) args.out(0)[i] = args.in(0)[i];
    });
    x = Tensor();  // the frontend lets go; the queued op still holds the buffer
    EXPECT_FALSE(in_storage.expired());
  }
  EXPECT_EQ(y.to_host(), std::vector<float>(1024, 7.f));
  waitall();
  EXPECT_TRUE(in_storage.expired()) << "the op kept its input alive after it ran";
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
    enqueue(context(d), "test_stale", {}, {&y}, [captured](Backend&, const OpArgs& args) {
      for (int i = 0; i < 256; ++i) args.out(0)[i] = captured[i];
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
    enqueue(context(d), "test_declared", {&x}, {&y}, [](Backend&, const OpArgs& args) {
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
