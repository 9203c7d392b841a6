// Covers framework/core/runtime.cpp (set_alloc_policy), framework/core/queue/queue.cpp (outputs allocated as an op starts), framework/core/tensor/enqueue.cpp, framework/core/queue/backlog.cpp, framework/core/context.cpp (the data queue).
// the allocation policies (enqueue, run) and the data
// queue: when an op's outputs get memory, what the backlog and back-pressure
// count, that no buffer is reused while an op that reads it may still run
// (under both policies, on both queues), and that errors, waitall(), stats
// and the trace cover the data queue.
#include <gtest/gtest.h>

#include "framework/json.h"

#include <atomic>
#include <optional>
#include <vector>

#include "framework/trace.h"
#include "test_util.h"
#include "train/train_test_util.h"

namespace amlp::testing {
namespace {

constexpr int64_t kN = 64 * 1024;  // floats: a 256 KiB block

// A pool limit for one test; the device's default after.
class ScopedMemoryLimit {
 public:
  ScopedMemoryLimit(Device d, size_t bytes) : d_(d), prev_(memory_limit(d)) { set_memory_limit(d, bytes, "the test"); }
  ~ScopedMemoryLimit() { set_memory_limit(d_, prev_.bytes, prev_.source); }

 private:
  Device d_;
  MemoryBudget prev_;
};

class AllocPolicyTest : public ::testing::Test {
 protected:
  void TearDown() override { expect_no_kernel_error_left(); }
  ScopedBlocking async_{false};
};

TEST_F(AllocPolicyTest, RunAllocatesAnOpsOutputsOnlyWhenTheWorkerStartsIt) {
  const Device d = Device::cpu(0);
  ScopedAllocPolicy run(AllocPolicy::Run);
  waitall();
  const size_t before = memory_stats(d).bytes_in_use;
  const size_t block = pool_block_bytes(kN * sizeof(float));
  Tensor x, y;
  {
    QueuePause pause(d);
    x = full({kN}, 2.f, d);
    y = add_scalar(x, 1.f);
    // Queued, not started: no memory yet, and the backlog counts none of it.
    EXPECT_EQ(memory_stats(d).bytes_in_use, before);
    EXPECT_FALSE(storage(x)->allocated());
    EXPECT_FALSE(storage(y)->allocated());
    const QueueStats q = queue_stats(d);
    EXPECT_EQ(q.backlog_bytes, 0u);
    EXPECT_EQ(q.unallocated_bytes, 2 * block);
  }
  y.wait_to_read();
  EXPECT_EQ(memory_stats(d).bytes_in_use, before + 2 * block);
  EXPECT_EQ(queue_stats(d).unallocated_bytes, 0u);
  EXPECT_EQ(queue_stats(d).backlog_bytes, 0u);
  EXPECT_EQ(y.to_host(), std::vector<float>(kN, 3.f));
}

TEST_F(AllocPolicyTest, EnqueueAllocatesWhenTheOpIsQueued) {
  const Device d = Device::cpu(0);
  ScopedAllocPolicy enqueue(AllocPolicy::Enqueue);
  waitall();
  const size_t before = memory_stats(d).bytes_in_use;
  const size_t block = pool_block_bytes(kN * sizeof(float));
  QueuePause pause(d);
  Tensor x = full({kN}, 2.f, d);
  EXPECT_TRUE(storage(x)->allocated());
  EXPECT_EQ(memory_stats(d).bytes_in_use, before + block);
  EXPECT_EQ(queue_stats(d).backlog_bytes, block);
  EXPECT_EQ(queue_stats(d).unallocated_bytes, 0u);
}

// The policy applies to outputs made from now on; empty() has no writer, so
// it gets its memory at once whatever the policy.
TEST_F(AllocPolicyTest, EmptyIsAllocatedAtOnceUnderRun) {
  ScopedAllocPolicy run(AllocPolicy::Run);
  Tensor e = empty({kN}, Device::cpu(0));
  EXPECT_TRUE(storage(e)->allocated());
}

// Back-pressure by bytes bounds what the queue will hold under run too: the
// outputs of queued ops count against it before they exist, so the frontend
// is held back instead of the worker allocating without bound.
TEST_F(AllocPolicyTest, BackPressureByBytesBoundsUnallocatedOutputs) {
  const Device d = Device::cpu(1);
  ScopedAllocPolicy run(AllocPolicy::Run);
  Queue& q = context(d).queue;
  const size_t block = pool_block_bytes(kN * sizeof(float));
  ScopedMaxPending bound(q, 0, 2 * block);
  Gate gate;
  q.push("gated", gate.waiter());
  std::vector<Tensor> xs;
  xs.push_back(full({kN}, 0.f, d));
  xs.push_back(full({kN}, 1.f, d));  // the bound is reached: two blocks to come
  std::atomic<bool> released{false};
  {
    OpenLater opener(gate, released);
    Tensor third = full({kN}, 2.f, d);  // held back until the worker frees room
    EXPECT_TRUE(released) << "a push past max-pending-bytes did not wait";
  }
  waitall();
  EXPECT_LE(queue_stats(d).peak_backlog_bytes, 2 * block);
}

// An allocation that fails as the op starts is that op's error: not thrown at
// the call site, but by the next blocker, naming out of memory and the op;
// ops downstream of it (on any queue) carry the same error.
TEST_F(AllocPolicyTest, OutOfMemoryAsTheOpStartsSurfacesAtTheNextBlocker) {
  const Device d = Device::cpu(2);
  ScopedAllocPolicy run(AllocPolicy::Run);
  waitall();
  empty_cache(d);
  ScopedMemoryLimit limit(d, memory_stats(d).reserved_bytes + 1024 * 1024);
  Tensor big = randn({4 * kN * 2}, d);  // 2 MiB past the limit's room: queued without complaint
  Tensor after = add_scalar(big, 1.f);
  try {
    after.wait_to_read();
    FAIL() << "no error from an allocation past the limit";
  } catch (const OutOfMemory& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("out of memory on cpu:2"), std::string::npos) << what;
    EXPECT_NE(what.find("'random_normal'"), std::string::npos) << what;
    EXPECT_NE(what.find("as it started"), std::string::npos) << what;
    EXPECT_EQ(e.limit, memory_stats(d).limit_bytes);
  }
  EXPECT_NO_THROW(waitall()) << "reported once, by the first blocker";
  EXPECT_EQ(queue_stats(d).unallocated_bytes, 0u);
  // The device goes on working once the work fits.
  Tensor small = full({16}, 1.f, d);
  EXPECT_EQ(small.to_host(), std::vector<float>(16, 1.f));
}

// --- never reused while a reader may run -------------------------------------------

struct ReuseCase {
  AllocPolicy policy;
  bool data_queue;
};

class NoReuseWhileRead : public ::testing::TestWithParam<ReuseCase> {
 protected:
  void TearDown() override { expect_no_kernel_error_left(); }
  ScopedBlocking async_{false};
};

// The producer (the device's queue, or its data queue) runs far ahead of the
// consumer, which is paused; the producer's tensors are dropped at once, so
// their blocks would go straight back to the pool and be handed to the next
// producer op if a pending read did not hold them. Each consumer result
// must see its own producer's value (and under AddressSanitizer a read of a
// block back in the pool, which is poisoned there, fails the test).
TEST_P(NoReuseWhileRead, ValuesSurviveHeavyReuse) {
  const auto [policy, on_data_queue] = GetParam();
  const Device d = Device::cpu(3);
  ScopedAllocPolicy scoped(policy);
  waitall();
  constexpr int kRounds = 64;
  std::vector<Tensor> outs;
  {
    Queue::Pause consumer(context(d).queue);
    const uint64_t launched = queue_stats(d).launched;
    for (int i = 0; i < kRounds; ++i) {
      Tensor x;
      {
        std::optional<DataQueueGuard> loader;
        if (on_data_queue) loader.emplace(d);
        x = full({kN}, float(i), d);
      }
      outs.push_back(add_scalar(x, 1.f));  // reads x; the handle goes now
    }
    // The loader ran every fill while the consumer is held: only the
    // pending reads pin the blocks now.
    if (on_data_queue) context(d).data_queue().wait_all();
    EXPECT_EQ(queue_stats(d).launched, launched) << "the consumer ran while paused";
  }
  for (int i = 0; i < kRounds; ++i) {
    const std::vector<float> v = outs[size_t(i)].to_host();
    ASSERT_EQ(v.front(), float(i) + 1.f) << "round " << i;
    ASSERT_EQ(v.back(), float(i) + 1.f) << "round " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, NoReuseWhileRead,
                         ::testing::Values(ReuseCase{AllocPolicy::Enqueue, false}, ReuseCase{AllocPolicy::Run, false},
                                           ReuseCase{AllocPolicy::Stream, false}, ReuseCase{AllocPolicy::Enqueue, true},
                                           ReuseCase{AllocPolicy::Run, true}, ReuseCase{AllocPolicy::Stream, true}),
                         [](const ::testing::TestParamInfo<ReuseCase>& i) {
                           return std::string(to_string(i.param.policy)) + (i.param.data_queue ? "_data_queue" : "");
                         });

class CrossQueueWrite : public ::testing::TestWithParam<AllocPolicy> {
 protected:
  void TearDown() override { expect_no_kernel_error_left(); }
  ScopedBlocking async_{false};
};

// A write on one queue waits for a pending read on the other: the data queue
// overwrites a buffer the paused device queue has yet to read.
TEST_P(CrossQueueWrite, WaitsForTheOtherQueuesRead) {
  const Device d = Device::cpu(3);
  ScopedAllocPolicy scoped(GetParam());
  Tensor b = full({kN}, 5.f, d);
  b.wait_to_read();
  Tensor y;
  {
    Queue::Pause consumer(context(d).queue);
    y = add_scalar(b, 1.f);
    DataQueueGuard loader(d);
    Tensor fresh = full({kN}, 7.f, d);
    copy_(b, fresh);  // must wait until y has read b
  }
  EXPECT_EQ(y.to_host(), std::vector<float>(kN, 6.f));
  EXPECT_EQ(b.to_host(), std::vector<float>(kN, 7.f));
}

INSTANTIATE_TEST_SUITE_P(Policies, CrossQueueWrite,
                         ::testing::Values(AllocPolicy::Enqueue, AllocPolicy::Run, AllocPolicy::Stream),
                         [](const ::testing::TestParamInfo<AllocPolicy>& i) { return std::string(to_string(i.param)); });

// --- stream-ordered reuse (PyTorch's caching allocator) ----------------------------

class StreamReuse : public AllocPolicyTest {
 protected:
  ScopedAllocPolicy stream_{AllocPolicy::Stream};
};

// The book's `y = x + 1` loop with no blocker: each dropped y lends its block
// to the next, which runs after it on the same queue. While the worker is
// held, the pool and the backlog hold x and two y's (the last one and the
// one being made), not one per queued op; every value is right after.
TEST_F(StreamReuse, ALoopThatDropsItsOutputHoldsOneIterationsMemory) {
  const Device d = Device::cpu(3);
  waitall();
  const size_t before = memory_stats(d).bytes_in_use;
  const uint64_t reuses = memory_stats(d).stream_reuses;
  const size_t block = pool_block_bytes(kN * sizeof(float));
  constexpr int kRounds = 200;
  Tensor x = full({kN}, 1.f, d);
  Tensor y, kept;
  {
    Queue::Pause held(context(d).queue);
    for (int i = 0; i < kRounds; ++i) {
      y = add_scalar(x, float(i));
      if (i == kRounds / 2) kept = y;  // a handle kept: its block is not lent
    }
    EXPECT_LE(memory_stats(d).bytes_in_use, before + 4 * block);
    EXPECT_LE(queue_stats(d).backlog_bytes, 4 * block) << "a lent block counted twice";
    EXPECT_GE(memory_stats(d).stream_reuses, reuses + kRounds - 3);
  }
  EXPECT_EQ(y.to_host(), std::vector<float>(kN, float(kRounds)));
  EXPECT_EQ(kept.to_host(), std::vector<float>(kN, float(kRounds / 2 + 1)));
  waitall();
  EXPECT_EQ(queue_stats(d).backlog_bytes, 0u);
  x = y = kept = Tensor();
  EXPECT_EQ(memory_stats(d).bytes_in_use, before);
}

// Under enqueue the same loop holds a block per queued op: the policy is
// what changes it.
TEST_F(StreamReuse, EnqueueHoldsABlockPerQueuedOp) {
  const Device d = Device::cpu(3);
  ScopedAllocPolicy enqueue(AllocPolicy::Enqueue);
  waitall();
  const size_t before = memory_stats(d).bytes_in_use;
  const size_t block = pool_block_bytes(kN * sizeof(float));
  constexpr int kRounds = 50;
  Tensor x = full({kN}, 1.f, d);
  Tensor y;
  {
    Queue::Pause held(context(d).queue);
    for (int i = 0; i < kRounds; ++i) y = add_scalar(x, float(i));
    EXPECT_GE(memory_stats(d).bytes_in_use, before + (kRounds + 1) * block);
  }
  EXPECT_EQ(y.to_host(), std::vector<float>(kN, float(kRounds)));
}

// A block still read on another queue is not lent until that read completed:
// the data queue draws while the device's queue, paused, has yet to read
// what it drew before; once it has, the data queue may take the block.
TEST_F(StreamReuse, ABlockReadOnAnotherQueueWaitsForThatRead) {
  const Device d = Device::cpu(3);
  waitall();
  const uint64_t reuses = memory_stats(d).stream_reuses;
  Tensor out;
  {
    Queue::Pause consumer(context(d).queue);
    Tensor x;
    {
      DataQueueGuard loader(d);
      x = full({kN}, 4.f, d);
    }
    out = add_scalar(x, 1.f);
    x = Tensor();  // offered: its last use is the paused queue's read
    DataQueueGuard loader(d);
    Tensor next = full({kN}, 9.f, d);
    EXPECT_EQ(memory_stats(d).stream_reuses, reuses) << "lent while the other queue's read was pending";
    next.wait_to_read();
  }
  EXPECT_EQ(out.to_host(), std::vector<float>(kN, 5.f));
  Tensor x;
  {
    DataQueueGuard loader(d);
    x = full({kN}, 4.f, d);
  }
  Tensor y = add_scalar(x, 1.f);
  x = Tensor();
  y.wait_to_read();  // the read completed; the block waits in the offers
  DataQueueGuard loader(d);
  Tensor z = full({kN}, 2.f, d);
  EXPECT_EQ(z.to_host(), std::vector<float>(kN, 2.f));
  EXPECT_EQ(y.to_host(), std::vector<float>(kN, 5.f));
}

// --- the data queue ------------------------------------------------------------------

class DataQueueTest : public ::testing::Test {
 protected:
  void TearDown() override { expect_no_kernel_error_left(); }
  ScopedBlocking async_{false};
};

TEST_F(DataQueueTest, OpsUnderTheGuardGoToTheDataQueueAndReadersWaitForThem) {
  const Device d = Device::cpu(4);
  Tensor x;
  const QueueStats q0 = queue_stats(d), dq0 = data_queue_stats(d);
  Gate gate;
  {
    DataQueueGuard loader(d);
    context(d).data_queue().push("gated", gate.waiter());
    x = full({kN}, 3.f, d);
  }
  Tensor y = add_scalar(x, 1.f);  // the device's queue: waits for the data queue's fill
  EXPECT_EQ(data_queue_stats(d).pushed, dq0.pushed + 2);
  EXPECT_EQ(queue_stats(d).pushed, q0.pushed + 1);
  std::atomic<bool> released{false};
  {
    OpenLater opener(gate, released);
    EXPECT_EQ(y.to_host(), std::vector<float>(kN, 4.f));
    EXPECT_TRUE(released) << "the reader did not wait for the data queue";
  }
}

TEST_F(DataQueueTest, WaitallDrainsTheDataQueue) {
  const Device d = Device::cpu(4);
  Gate gate;
  std::atomic<bool> ran{false};
  {
    DataQueueGuard loader(d);
    context(d).data_queue().push("gated", gate.waiter());
    context(d).data_queue().push("mark", [&] { ran = true; });
  }
  std::atomic<bool> released{false};
  OpenLater opener(gate, released);
  waitall();
  EXPECT_TRUE(released);
  EXPECT_TRUE(ran);
}

// A failure on the data queue reaches the training op that reads its output,
// on the other queue, and is reported once.
TEST_F(DataQueueTest, AnErrorCrossesToTheDeviceQueue) {
  const Device d = Device::cpu(5);
  ScopedAllocPolicy run(AllocPolicy::Run);
  waitall();
  empty_cache(d);
  ScopedMemoryLimit limit(d, memory_stats(d).reserved_bytes + 1024 * 1024);
  Tensor x;
  {
    DataQueueGuard loader(d);
    x = randn({8 * kN}, d);  // 2 MiB: fails as it starts on the data queue
  }
  Tensor y = add_scalar(x, 1.f);
  try {
    y.wait_to_read();
    FAIL() << "no error crossed from the data queue";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("on cpu:5 data"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(waitall()) << "reported once";
}

TEST_F(DataQueueTest, HasItsOwnTraceTrack) {
  ScratchDir dir;
  const Device d = Device::cpu(6);
  trace::start();
  {
    DataQueueGuard loader(d);
    full({16}, 1.f, d).wait_to_read();
  }
  trace::stop_and_write(dir.file("t.json"));
  const amlp::Json t = read_json(dir.file("t.json"));
  bool track = false, span = false;
  int tid = -1;
  for (const auto& e : t.at("traceEvents"))
    if (e.value("ph", "") == "M" && e.contains("args") && e["args"].value("name", "") == "queue cpu:6 data")
      track = true, tid = e.value("tid", -1);
  for (const auto& e : t.at("traceEvents"))
    if (e.value("ph", "") == "X" && e.value("tid", -2) == tid && e.value("name", "") == "fill") span = true;
  EXPECT_TRUE(track);
  EXPECT_TRUE(span);
}

TEST_F(DataQueueTest, SettingsReachIt) {
  const Device d = Device::cpu(6);
  {
    DataQueueGuard loader(d);
    ScopedBlocking sync(true);
    EXPECT_TRUE(context(d).data_queue().blocking());
  }
  EXPECT_FALSE(context(d).data_queue().blocking());
}

TEST_F(DataQueueTest, IsRefusedOnCuda) {
  // Absent (no GPU) or present, a CUDA device has no data queue: DeviceError.
  EXPECT_THROW(DataQueueGuard(Device::cuda(0)), DeviceError);
}

}  // namespace
}  // namespace amlp::testing
