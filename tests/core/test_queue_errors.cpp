// Covers framework/core/queue/queue_errors.cpp, framework/core/tensor/tensor.cpp (HostCopy).
// what an error does (docs/design.md, section 5): a queue
// keeps its first failure and counts the independent ones after it; an
// asynchronous device fault is blamed on the op whose completion exposed it,
// saying it may not be the culprit, in every path; a HostCopy reports its
// own copy's outcome, whatever later ops do to the source.
#include <stdexcept>
#include <string>

#include "framework/core/tensor/enqueue.h"
#include "test_util.h"

namespace amlp::testing {
namespace {

using detail::enqueue;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A device whose launched work may fail later, as a GPU's does: the CPU
// backend's kernels have finished when they return, so its faults are never
// asynchronous. Once `fault_after` is set, every op after that one sees the
// fault as it completes (after_op), and `fault_in_wait` makes every wait see
// it: a sticky fault, as the CUDA backend reports it (DeviceFault).
struct FaultyDevice : StreamSync {
  std::atomic<uint64_t> fault_after{0};  // 0: no fault seen by after_op
  std::atomic<bool> fault_in_wait{false};
  std::atomic<bool> told_blocking{false};

  void set_blocking(bool on) override { told_blocking = on; }
  bool asynchronous() const override { return true; }
  void after_op(uint64_t seq, bool) override {
    const uint64_t f = fault_after.load();
    if (f && seq > f) throw DeviceFault("fake device fault: an illegal address");
  }
  bool is_complete(uint64_t) override { return true; }
  void wait_complete(uint64_t) override {
    if (fault_in_wait) throw DeviceFault("fake device fault: an illegal address");
  }
};

// Two independent failures on one queue: the first is reported, the second
// counted in its message, and nothing is left behind for the next blocker.
TEST(QueueErrors, TheFirstFailureIsReportedAndTheOnesAfterItCounted) {
  Queue q("errors:0", nullptr);
  const uint64_t first = q.push("first_failure", [] { throw std::runtime_error("the first"); });
  q.push("fine", [] {});
  q.push("second_failure", [] { throw std::runtime_error("the second"); });
  q.push("third_failure", [] { throw std::runtime_error("the third"); });
  try {
    q.wait_all();
    FAIL() << "wait_all() did not rethrow";
  } catch (const KernelError& e) {
    EXPECT_EQ(e.op, "first_failure");
    EXPECT_EQ(e.seq, first);
    EXPECT_TRUE(has(e.what(), "the first")) << e.what();
    EXPECT_TRUE(has(e.what(), "(and 2 more failures on errors:0 after it)")) << e.what();
  }
  EXPECT_NO_THROW(q.wait_all()) << "a failure was reported twice";
  q.push("alone", [] { throw std::runtime_error("alone"); });
  try {
    q.wait_all();
    FAIL() << "wait_all() did not rethrow";
  } catch (const KernelError& e) {
    EXPECT_EQ(e.op, "alone");
    EXPECT_FALSE(has(e.what(), "more failure")) << "the count did not start again: " << e.what();
  }
}

// An op that did not run because its input failed is not another failure.
TEST(QueueErrors, OpsDownstreamOfAFailureAreNotCounted) {
  ScopedBlocking async(false);
  const Device d = Device::cpu(0);
  Tensor a = full({4}, 1.f, d);
  Tensor y = empty({4}, d);
  enqueue(context(d), "test_fail", {&a}, {&y}, {}, [](Backend&, const OpArgs&) { throw std::runtime_error("once"); });
  Tensor z = relu(add_scalar(y, 1.f));  // neither runs
  try {
    z.wait_to_read();
    FAIL() << "wait_to_read() did not rethrow";
  } catch (const KernelError& e) {
    EXPECT_EQ(e.op, "test_fail");
    EXPECT_FALSE(has(e.what(), "more failure")) << e.what();
  }
  EXPECT_NO_THROW(waitall());
}

// A fault seen as the next op completes is blamed on that op as its
// exposer, never as its culprit; the same fault met again by the blocker's
// own wait is not counted as another failure.
TEST(DeviceFaults, AFaultSeenAsTheNextOpCompletesNamesThatOpAsItsExposer) {
  FaultyDevice dev;
  Queue q("faulty:0", &dev);
  const uint64_t culprit = q.push("culprit", [] {});
  q.wait_all();
  dev.fault_after = culprit;
  dev.fault_in_wait = true;
  const uint64_t exposer = q.push("exposer", [] {});
  try {
    q.wait_all();
    FAIL() << "wait_all() did not rethrow the fault";
  } catch (const KernelError& e) {
    EXPECT_EQ(e.op, "exposer");
    EXPECT_EQ(e.seq, exposer);
    EXPECT_EQ(e.blame, KernelError::Blame::ExposedBy);
    EXPECT_TRUE(has(e.what(), "asynchronous device fault on faulty:0")) << e.what();
    EXPECT_TRUE(has(e.what(), "exposed as kernel 'exposer'")) << e.what();
    EXPECT_TRUE(has(e.what(), "may not be the culprit")) << e.what();
    EXPECT_TRUE(has(e.what(), "ASYNCMLP_BLOCKING=1")) << e.what();
    EXPECT_TRUE(has(e.what(), "fake device fault")) << e.what();
    EXPECT_FALSE(has(e.what(), "more failure")) << "one fault counted twice: " << e.what();
  }
}

// A fault the device reports only when a blocker waits names the op waited
// for, by name and number, as its exposer.
TEST(DeviceFaults, AFaultSeenByAWaitNamesTheOpWaitedFor) {
  FaultyDevice dev;
  Queue q("faulty:0", &dev);
  q.push("earlier", [] {});
  const uint64_t waited = q.push("waited_for", [] {});
  dev.fault_in_wait = true;
  try {
    q.wait_for(waited);
    FAIL() << "wait_for() did not rethrow the fault";
  } catch (const KernelError& e) {
    EXPECT_EQ(e.op, "waited_for");
    EXPECT_EQ(e.seq, waited);
    EXPECT_EQ(e.blame, KernelError::Blame::ExposedBy);
    EXPECT_TRUE(has(e.what(), "may not be the culprit")) << e.what();
  }
  dev.fault_in_wait = false;
  EXPECT_NO_THROW(q.wait_all());
}

// In synchronous mode every op was waited for as it was queued: a fault
// seen as an op completes is that op's, and the push throws it.
TEST(DeviceFaults, InSynchronousModeTheOpThatSawTheFaultIsItsCulprit) {
  FaultyDevice dev;
  Queue q("faulty:0", &dev);
  q.set_blocking(true);
  EXPECT_TRUE(dev.told_blocking) << "the queue did not tell its backend its synchronous mode";
  const uint64_t fine = q.push("fine", [] {});
  dev.fault_after = fine;
  try {
    q.push("faulting", [] {});
    FAIL() << "a synchronous push did not throw the fault";
  } catch (const KernelError& e) {
    EXPECT_EQ(e.op, "faulting");
    EXPECT_EQ(e.blame, KernelError::Blame::Culprit);
    EXPECT_FALSE(has(e.what(), "may not be the culprit")) << e.what();
  }
  q.set_blocking(false);
  EXPECT_FALSE(dev.told_blocking);
  dev.fault_after = 0;
  EXPECT_NO_THROW(q.wait_all());
}

// A HostCopy of a buffer whose writer failed reports that failure, even
// after a later op repaired the buffer and the failure was reported once
// already: its copy never ran, and its values are not the buffer's.
TEST(HostCopyErrors, ACopyThatDidNotRunSaysSoAfterALaterWriteRepairedItsSource) {
  ScopedBlocking async(false);
  const Device d = Device::cpu(0);
  Tensor a = full({4}, 1.f, d);
  Tensor x = empty({4}, d);
  enqueue(context(d), "test_fail", {&a}, {&x}, {}, [](Backend&, const OpArgs&) { throw std::runtime_error("x lost"); });
  EXPECT_THROW(x.wait_to_read(), KernelError);  // reported: no queue keeps it now
  HostCopy h = x.to_host_async();                // does not run: x carries the failure
  copy_(x, a);                                   // a later write repairs x
  context(d).queue.drain();
  try {
    const std::vector<float>& v = h.get();
    FAIL() << "get() handed over values its copy never wrote (" << v.size() << " of them)";
  } catch (const KernelError& e) {
    EXPECT_EQ(e.op, "test_fail");
  }
  EXPECT_EQ(x.to_host(), std::vector<float>(4, 1.f));
}

}  // namespace
}  // namespace amlp::testing
