// Covers framework/core/context.cpp (check_frontend), framework/core/tensor/tensor.cpp (HostCopy), framework/core/runtime.cpp (settings).
// who may touch what (framework/asyncmlp.h,
// "Threads"): one thread drives a device, and another that queues on it, or
// waits for one of its tensors, gets one clear Error; a buffer's error may
// be read while a later op writes the buffer; a queue's settings may be
// changed from any thread while another pushes. The races are caught by the
// ThreadSanitizer build (tools/test.sh).
#include <string>
#include <thread>

#include "test_util.h"

namespace amlp::testing {
namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Runs `f` on a thread of its own; returns the Error it threw ("" if none).
template <class F>
std::string error_on_another_thread(F f) {
  std::string what = "";
  std::thread t([&] {
    try {
      f();
    } catch (const Error& e) {
      what = e.what();
      if (what.empty()) what = "(an Error with no message)";
    }
  });
  t.join();
  return what;
}

TEST(FrontendThreads, ASecondThreadThatQueuesOnADeviceGetsOneClearError) {
  const Device d = Device::cpu(3);
  Tensor x = full({4}, 1.f, d);  // this thread drives cpu:3 from here on
  const std::string queued = error_on_another_thread([&] { Tensor y = add_scalar(x, 1.f); });
  EXPECT_TRUE(has(queued, "cpu:3 is driven by thread")) << "another thread queued on cpu:3: '" << queued << "'";
  EXPECT_TRUE(has(queued, "framework/asyncmlp.h")) << queued;
  const std::string waited = error_on_another_thread([&] { x.wait_to_read(); });
  EXPECT_TRUE(has(waited, "cpu:3 is driven by thread")) << "another thread waited on cpu:3: '" << waited << "'";
  // Nothing of either reached the queue: this thread goes on as before.
  EXPECT_EQ(add_scalar(x, 1.f).to_host(), std::vector<float>(4, 2.f));
}

// Reading another device's tensor is touching that device: a thread that
// drives cpu:5 cannot copy from cpu:4, which this one drives.
TEST(FrontendThreads, AnOpThatReadsAnotherThreadsDeviceIsRefused) {
  Tensor x = full({4}, 1.f, Device::cpu(4));
  const std::string copied = error_on_another_thread([&] {
    Tensor mine = full({4}, 0.f, Device::cpu(5));
    mine.wait_to_read();
    Tensor y = copy_to(x, Device::cpu(5));
  });
  EXPECT_TRUE(has(copied, "cpu:4 is driven by thread")) << "'" << copied << "'";
}

// A thread that ended lets go of its devices: the next one takes them over.
TEST(FrontendThreads, AThreadThatEndedHandsItsDeviceOver) {
  const Device d = Device::cpu(6);
  Tensor from_worker;
  const std::string first = error_on_another_thread([&] {
    from_worker = full({4}, 2.f, d);
    from_worker.wait_to_read();
  });
  EXPECT_EQ(first, "");
  EXPECT_EQ(add_scalar(from_worker, 1.f).to_host(), std::vector<float>(4, 3.f));
}

// A HostCopy's get() reads whether its copy failed while the same buffer is
// written in place by the next ops (an SGD step). Without its own error slot
// that read races the worker's write of the buffer's error.
TEST(FrontendThreads, AHostCopyReadsItsErrorWhileAnInPlaceStepWritesTheBuffer) {
  ScopedBlocking async(false);
  const Device d = Device::cpu(0);
  Tensor w = full({4096}, 1.f, d);
  Tensor g = full({4096}, 0.f, d);  // a zero gradient: w keeps its values
  Tensor no_momentum;
  for (int i = 0; i < 200; ++i) {
    HostCopy h = w.to_host_async();
    for (int k = 0; k < 4; ++k) sgd_update_(w, g, no_momentum, 0.1f, 0.f, 0.f, 1.f);
    ASSERT_EQ(h.get()[0], 1.f);
  }
  waitall();
}

// A stand-in for a backend that records what its queue tells it.
struct RecordingDevice : StreamSync {
  std::atomic<bool> told_blocking{false};
  void set_blocking(bool on) override { told_blocking = on; }
};

// Synchronous mode set from one thread while another pushes: the queue's
// flag is shared state, and its backend is told each change.
TEST(FrontendThreads, SynchronousModeMayBeSetWhileAnotherThreadPushes) {
  RecordingDevice dev;
  Queue q("settings:0", &dev);
  std::atomic<bool> pushing{true};
  std::thread setter([&] {
    for (int i = 0; pushing; ++i) q.set_blocking(i % 2 == 0);
    q.set_blocking(true);
  });
  for (int i = 0; i < 2000; ++i) q.push("op", [] {});
  pushing = false;
  setter.join();
  EXPECT_TRUE(q.blocking());
  EXPECT_TRUE(dev.told_blocking) << "the backend was not told its queue's synchronous mode";
  q.set_blocking(false);
  EXPECT_FALSE(dev.told_blocking);
  q.wait_all();
}

}  // namespace
}  // namespace amlp::testing
