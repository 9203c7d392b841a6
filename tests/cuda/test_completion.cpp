// Covers framework/cuda/event_ring.cpp, framework/core/queue/queue_wait.cpp, framework/core/tensor/tensor.cpp (HostCopy::ready), framework/core/runtime.cpp (DeviceTimer::reached).
// every op completes, whether its kernel ran or not
// (cuda/event_ring.h): an op that did not run because its input came from a
// failed op records no CUDA event, yet HostCopy::ready(), DeviceTimer::reached()
// and queue_stats().completed must reach it even when it is the last op on its
// queue. On every device the machine has: cpu:0 here, cuda:0 on a GPU.
#include <stdexcept>

#include "framework/core/tensor/enqueue.h"
#include "test_util.h"

namespace amlp::testing {
namespace {

using detail::enqueue;

// Polls `done` until it holds or the hang guard passes; true when it held.
template <class F>
bool eventually(F done) {
  const auto until = std::chrono::steady_clock::now() + kHangGuard;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

class Completion : public DeviceTest {};

// A timer's op dropped before it ran (drop_pending) is the last op: the
// device never records the point, and it still reads reached.
TEST_P(Completion, ADroppedTimerLastOnItsQueueReadsReached) {
  ScopedBlocking async(false);
  Tensor a = full({16}, 1.f, dev());
  a.wait_to_read();
  DeviceTimer t;
  {
    PausedQueue paused(dev());
    Tensor b = relu(a);
    t = DeviceTimer::mark(dev());
    EXPECT_GE(drop_pending(), 2u);
  }
  EXPECT_TRUE(eventually([&] { return t.reached(); })) << "a dropped timer never reads reached";
  EXPECT_TRUE(eventually([&] {
    const QueueStats s = queue_stats(dev());
    return s.completed == s.pushed;
  })) << "queue_stats().completed stalls below pushed";
  EXPECT_THROW(t.seconds_since(t), Error);  // a point the device never reached
}

// A copy that does not run (its input carries a failure) is the last op:
// it reads ready, and get() reports the failure.
TEST_P(Completion, ASkippedCopyAloneAtTheEndReadsReady) {
  ScopedBlocking async(false);
  Tensor a = full({16}, 1.f, dev());
  Tensor y = empty({16}, dev());
  enqueue(context(dev()), "test_fail", {&a}, {&y}, {}, [](Backend&, const OpArgs&) {
    throw std::runtime_error("an injected failure");
  });
  Tensor z = relu(y);  // does not run either
  HostCopy h = z.to_host_async();
  EXPECT_TRUE(eventually([&] { return h.ready(); })) << "a copy that never ran never reads ready";
  EXPECT_TRUE(eventually([&] {
    const QueueStats s = queue_stats(dev());
    return s.completed == s.pushed;
  })) << "queue_stats().completed stalls below pushed";
  EXPECT_THROW(h.get(), Error);  // the failure, reported once: nothing left for the next test
}

INSTANTIATE_TEST_SUITE_P(Devices, Completion, ::testing::ValuesIn(test_devices()), device_name);

}  // namespace
}  // namespace amlp::testing
