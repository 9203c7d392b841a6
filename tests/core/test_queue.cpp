// Covers framework/core/queue/queue.cpp, framework/core/queue/queue_wait.cpp, framework/core/tensor/tensor.cpp (blockers, HostCopy), framework/core/runtime.cpp (waitall, DeviceTimer, QueuePause, drop_pending).
// the execution contract (docs/design.md §1–§5):
// pushes return before their kernels run, kernels run in push order on the
// worker, each blocker waits for exactly what it must, kernel errors cross the
// queue (or surface at the call site in synchronous mode), back-pressure
// blocks the push, devices run in parallel, and a queue drains before it dies.
//
// Every assertion is about ordering or causality, never about how long
// something took: a kernel gated shut cannot have run, so a blocker that
// returns before the gate opened did not wait. Waits are bounded by
// kHangGuard so a broken property fails instead of hanging.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <sstream>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include "framework/core/tensor/enqueue.h"
#include "test_util.h"

namespace amlp::testing {
namespace {

using namespace std::chrono_literals;

class QueueSemantics : public DeviceTest {
 protected:
  Queue& queue() { return context(dev()).queue; }
};

TEST_P(QueueSemantics, PushReturnsBeforeTheKernelRuns) {
  Queue& q = queue();
  std::atomic<bool> ran{false};
  std::thread::id ran_on;
  uint64_t seq = 0;
  Tensor t;
  {
    PausedQueue paused(dev());
    seq = q.push("mark", [&] {
      ran_on = std::this_thread::get_id();
      ran = true;
    });
    t = full({4}, 1.f, dev());  // a frontend op returns with its output allocated, its kernel queued
    EXPECT_FALSE(ran);
    EXPECT_FALSE(q.complete(seq));
    EXPECT_FALSE(q.complete(storage(t)->last_writer().seq));
    EXPECT_EQ(q.stats().depth, 2u);
  }
  q.wait_for(seq);
  EXPECT_TRUE(ran);
  EXPECT_NE(ran_on, std::this_thread::get_id()) << "a kernel ran on the frontend thread";
}

TEST_P(QueueSemantics, KernelsRunInPushOrder) {
  Queue& q = queue();
  std::vector<int> order;  // touched by the worker only, until wait_all()
  {
    PausedQueue paused(dev());  // all queued before any runs
    for (int i = 0; i < 50; ++i) q.push("record", [&order, i] { order.push_back(i); });
  }
  q.wait_all();
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[i], i);
}

TEST_P(QueueSemantics, WaitToReadWaitsForItsProducerAndNoMore) {
  Queue& q = queue();
  Gate gate;
  Tensor t = full({8}, 2.f, dev());                       // the producer
  const uint64_t later = q.push("gated", gate.waiter());  // a later op, held shut
  const uint64_t after = q.push("after", [] {});
  t.wait_to_read();
  EXPECT_TRUE(q.complete(storage(t)->last_writer().seq));
  EXPECT_FALSE(q.complete(later)) << "wait_to_read waited for an op after the producer";
  EXPECT_FALSE(q.complete(after));
  gate.open();
  q.wait_for(after);
  EXPECT_EQ(t.to_host(), std::vector<float>(8, 2.f));
}

TEST_P(QueueSemantics, WaitallDrainsEveryDevice) {
  std::vector<Device> devices{Device::cpu(0), Device::cpu(1)};
  if (dev().is_cuda()) devices.push_back(dev());
  const size_t n = devices.size();
  // Each device's work sits behind its own gate; the gates open one by one,
  // in both orders, so whichever device waitall() took last, it must have
  // waited for the others too.
  for (bool reversed : {false, true}) {
    SCOPED_TRACE(reversed ? "gates opened last device first" : "gates opened first device first");
    std::vector<std::unique_ptr<Gate>> gates;
    std::vector<std::atomic<bool>> released(n);
    std::vector<Tensor> outs;
    for (size_t i = 0; i < n; ++i) {
      gates.push_back(std::make_unique<Gate>());
      context(devices[i]).queue.push("gated", gates[i]->waiter());
      outs.push_back(full({16}, 1.f, devices[i]));  // behind the gate on each device
    }
    std::thread opener([&] {
      for (size_t k = 0; k < n; ++k) {
        const size_t i = reversed ? n - 1 - k : k;
        std::this_thread::sleep_for(20ms);
        released[i] = true;
        gates[i]->open();
      }
    });
    waitall();
    for (size_t i = 0; i < n; ++i) {
      SCOPED_TRACE(devices[i].str());
      EXPECT_TRUE(released[i]) << "waitall returned before this device's work could run";
      const QueueStats s = queue_stats(devices[i]);
      EXPECT_EQ(s.depth, 0u);
      EXPECT_EQ(s.completed, s.pushed);
      EXPECT_TRUE(context(devices[i]).queue.complete(storage(outs[i])->last_writer().seq));
    }
    opener.join();
  }
}

// The five blockers of docs/design.md §4. Each is given a tensor whose producer sits
// behind a shut gate.
struct Blocker {
  const char* name;
  std::function<void(const Tensor&)> call;
};
const Blocker kBlockers[] = {
    {"wait_to_read", [](const Tensor& t) { t.wait_to_read(); }},
    {"waitall", [](const Tensor&) { waitall(); }},
    {"to_host", [](const Tensor& t) { EXPECT_EQ(t.to_host(), std::vector<float>{3.f}); }},
    {"item", [](const Tensor& t) { EXPECT_EQ(t.item(), 3.f); }},
    {"operator<<", [](const Tensor& t) {
       std::ostringstream os;
       os << t;
       EXPECT_NE(os.str().find("[3]"), std::string::npos) << os.str();
     }},
};

TEST_P(QueueSemantics, EachBlockerBlocksUntilItsProducerRan) {
  Queue& q = queue();
  for (const Blocker& b : kBlockers) {
    SCOPED_TRACE(b.name);
    Gate gate;
    std::atomic<bool> released{false};
    q.push("gated", gate.waiter());
    Tensor t = full({1}, 3.f, dev());  // cannot run before the gate opens
    OpenLater opener(gate, released);
    b.call(t);
    EXPECT_TRUE(released) << b.name << " returned before its producer could run";
    EXPECT_TRUE(q.complete(storage(t)->last_writer().seq));
  }
}

// A way to make a kernel fail: the op that fails, how many ops the
// injection pushes (the failing one last), and the injection itself, which
// returns the failing op's sequence number.
struct Fault {
  const char* name;
  const char* op;
  uint64_t pushes;
  std::function<uint64_t(Queue&, Device)> inject;
};
const Fault kFaults[] = {
    {"throwing kernel", "injected_fault", 1,
     [](Queue& q, Device) { return q.push("injected_fault", [] { throw std::runtime_error("injected failure"); }); }},
    {"check_finite on NaN", "check_finite", 2,
     [](Queue& q, Device d) {
       Tensor x = full({3}, std::nanf(""), d);
       check_finite(x, "the test tensor");
       return q.stats().pushed;
     }},
};

TEST_P(QueueSemantics, KernelErrorResurfacesAtTheNextBlocker) {
  Queue& q = queue();
  for (const Fault& f : kFaults)
    for (const Blocker& b : kBlockers) {
      SCOPED_TRACE(std::string(f.name) + ", caught by " + b.name);
      uint64_t failed = 0;
      ASSERT_NO_THROW(failed = f.inject(q, dev())) << "an asynchronous push threw";
      Tensor t = full({1}, 3.f, dev());  // pushing after the failure still works
      try {
        b.call(t);
        ADD_FAILURE() << b.name << " did not rethrow the kernel error";
      } catch (const KernelError& e) {
        EXPECT_EQ(e.op, f.op);
        EXPECT_EQ(e.seq, failed);
        EXPECT_EQ(e.device, dev().str());
      }
      // The error is handed over once, and the queue keeps working.
      EXPECT_NO_THROW(waitall());
      EXPECT_EQ(add_scalar(t, 1.f).item(), 4.f);
    }
}

TEST_P(QueueSemantics, SynchronousModeSurfacesErrorsAtTheCallSite) {
  ScopedBlocking sync(true);
  Queue& q = queue();
  std::atomic<bool> ran{false};
  q.push("mark", [&] { ran = true; });
  EXPECT_TRUE(ran) << "a synchronous push returned before its kernel ran";
  for (const Fault& f : kFaults) {
    SCOPED_TRACE(f.name);
    const uint64_t expected_seq = q.stats().pushed + f.pushes;
    try {
      f.inject(q, dev());
      ADD_FAILURE() << "the failing push returned normally";
    } catch (const KernelError& e) {
      EXPECT_EQ(e.op, f.op);
      EXPECT_EQ(e.seq, expected_seq);
    }
    Tensor t = full({2}, 1.f, dev());
    EXPECT_TRUE(q.complete(storage(t)->last_writer().seq));
    EXPECT_EQ(sum(t).item(), 2.f);  // still usable
  }
}

// Runs `push` on a second thread while the queue is paused and full; it must
// not return until the worker has made room.
void expect_push_waits_for_room(Device d, PausedQueue& paused, const std::function<void()>& push) {
  Queue& q = context(d).queue;
  const QueueStats before = q.stats();
  std::atomic<bool> returned{false};
  uint64_t completed_at_return = 0;
  std::thread pusher([&] {
    push();
    completed_at_return = q.stats().completed;
    returned = true;
  });
  std::this_thread::sleep_for(50ms);  // gives a non-blocking push the chance to be caught
  EXPECT_FALSE(returned) << "the push past the bound returned while the worker was paused";
  EXPECT_EQ(q.stats().pushed, before.pushed);
  paused.resume();
  pusher.join();
  EXPECT_TRUE(returned);
  EXPECT_GT(completed_at_return, before.completed) << "the push returned before any op completed";
}

TEST_P(QueueSemantics, BackPressureOnPendingOpsBlocksThePush) {
  Queue& q = queue();
  ScopedMaxPending bound(q, /*ops=*/2, /*bytes=*/0);
  PausedQueue paused(dev());
  q.push("fill 1", [] {});
  q.push("fill 2", [] {});
  EXPECT_EQ(q.stats().depth, 2u);
  expect_push_waits_for_room(dev(), paused, [&] { q.push("third", [] {}); });
  q.wait_all();
}

TEST_P(QueueSemantics, BackPressureOnPendingBytesBlocksThePush) {
  Queue& q = queue();
  Tensor a = empty({1024}, dev()), b = empty({1024}, dev());  // 4 KiB each
  ScopedMaxPending bound(q, /*ops=*/0, /*bytes=*/6 * 1024);
  PausedQueue paused(dev());
  q.push("hold a", [] {}, {storage(a)});
  EXPECT_EQ(q.stats().backlog_bytes, storage(a)->bytes());
  expect_push_waits_for_room(dev(), paused, [&] { q.push("hold b", [] {}, {storage(b)}); });
  q.wait_all();
  EXPECT_EQ(q.stats().backlog_bytes, 0u);
}

TEST_P(QueueSemantics, SequenceNumbersAndCounters) {
  Queue& q = queue();
  q.reset_peak();
  const QueueStats s0 = q.stats();
  EXPECT_EQ(s0.depth, 0u);
  EXPECT_EQ(s0.peak_unlaunched, 0u);
  EXPECT_EQ(s0.completed, s0.pushed);
  Tensor t = empty({256}, dev());
  uint64_t a, b, c;
  {
    PausedQueue paused(dev());
    a = q.push("a", [] {});
    b = q.push("b", [] {}, {storage(t)});
    c = q.push("c", [] {});
    EXPECT_EQ(a, s0.pushed + 1);
    EXPECT_EQ(b, a + 1);
    EXPECT_EQ(c, b + 1);
    const QueueStats s = q.stats();
    EXPECT_EQ(s.pushed, c);
    EXPECT_EQ(s.completed, s0.completed);
    EXPECT_EQ(s.depth, 3u);
    EXPECT_EQ(s.peak_unlaunched, 3u);
    EXPECT_EQ(s.backlog_bytes, storage(t)->bytes());
    EXPECT_EQ(queue_stats(dev()).pushed, c);  // the runtime reports the same queue
  }
  q.wait_all();
  QueueStats s = q.stats();
  EXPECT_EQ(s.completed, c);
  EXPECT_EQ(s.depth, 0u);
  EXPECT_EQ(s.peak_unlaunched, 3u);  // a peak outlives the backlog
  EXPECT_EQ(s.backlog_bytes, 0u);
  EXPECT_EQ(s.peak_backlog_bytes, storage(t)->bytes());
  reset_peaks(dev());
  s = q.stats();
  EXPECT_EQ(s.peak_unlaunched, 0u);
  EXPECT_EQ(s.peak_backlog_bytes, 0u);
}

INSTANTIATE_TEST_SUITE_P(Devices, QueueSemantics, ::testing::ValuesIn(test_devices()), device_name);

// --- CPU devices and standalone queues -------------------------------------------

// Each kernel waits until both are running at once: only possible if cpu:0's
// and cpu:1's workers run in parallel. (Serialised, the first would give up
// after kHangGuard and the test would fail.)
TEST(QueueCpuDevices, TwoDevicesRunAtTheSameTime) {
  struct Rendezvous {
    std::mutex mu;
    std::condition_variable cv;
    int arrived = 0;
    bool arrive_and_wait() {
      std::unique_lock<std::mutex> lk(mu);
      ++arrived;
      cv.notify_all();
      return cv.wait_for(lk, kHangGuard, [&] { return arrived == 2; });
    }
  };
  ScopedBlocking async(false);
  auto rv = std::make_shared<Rendezvous>();
  std::atomic<int> met{0};
  for (int i : {0, 1})
    context(Device::cpu(i)).queue.push("rendezvous", [rv, &met] {
      if (rv->arrive_and_wait()) ++met;
    });
  waitall();
  EXPECT_EQ(met, 2) << "cpu:0 and cpu:1 never ran kernels at the same time";
}

TEST(QueueCpuDevices, CrossDeviceCopyWaitsForItsSource) {
  ScopedBlocking async(false);
  Gate gate;
  std::atomic<bool> released{false};
  context(Device::cpu(0)).queue.push("gated", gate.waiter());
  Tensor src = full({5}, 7.f, Device::cpu(0));  // behind the gate on cpu:0
  Tensor dst = copy_to(src, Device::cpu(1));     // queued on cpu:1, which is not held
  OpenLater opener(gate, released);
  EXPECT_EQ(dst.to_host(), std::vector<float>(5, 7.f));
  EXPECT_TRUE(released) << "the copy on cpu:1 ran before its source on cpu:0 was written";
}

// Write-after-read across queues: an in-place write on cpu:0 must wait for a
// copy on cpu:1 that still has to read the old values.
TEST(QueueCpuDevices, AWriteWaitsForAPendingReadOnAnotherQueue) {
  ScopedBlocking async(false);
  Tensor w = full({5}, 1.f, Device::cpu(0));
  Tensor twos = full({5}, 2.f, Device::cpu(0));
  waitall();
  Gate gate;
  std::atomic<bool> released{false};
  context(Device::cpu(1)).queue.push("gated", gate.waiter());
  Tensor snapshot = copy_to(w, Device::cpu(1));  // reads w on cpu:1, behind the gate
  copy_(w, twos);                                // overwrites w on cpu:0
  OpenLater opener(gate, released);
  EXPECT_EQ(snapshot.to_host(), std::vector<float>(5, 1.f)) << "cpu:0 overwrote w before cpu:1 read it";
  EXPECT_EQ(w.to_host(), std::vector<float>(5, 2.f));
  EXPECT_TRUE(released);
}

// A buffer referenced by pending ops on two queues is counted once, by the
// queue that first referred to it, and un-counted when its last op finishes
// on whichever queue that is.
TEST(QueueCpuDevices, SharedBufferBacklogIsCountedOnceAndReturnsToZero) {
  ScopedBlocking async(false);
  Queue& q0 = context(Device::cpu(0)).queue;
  Queue& q1 = context(Device::cpu(1)).queue;
  Tensor shared = empty({1024}, Device::cpu(0));
  const size_t bytes = storage(shared)->bytes();
  const size_t base0 = q0.stats().backlog_bytes, base1 = q1.stats().backlog_bytes;
  {
    PausedQueue p0(Device::cpu(0)), p1(Device::cpu(1));
    q0.push("read on cpu:0", [] {}, {storage(shared)});
    q1.push("read on cpu:1", [] {}, {storage(shared)});
    EXPECT_EQ(q0.stats().backlog_bytes - base0, bytes);
    EXPECT_EQ(q1.stats().backlog_bytes - base1, 0u);
    p0.resume();  // cpu:0 finishes first; cpu:1 still holds the buffer
    q0.wait_all();
    EXPECT_EQ(q0.stats().backlog_bytes - base0, bytes);
  }  // cpu:1's op is the last: it un-counts the bytes on cpu:0
  waitall();
  EXPECT_EQ(q0.stats().backlog_bytes, base0);
  EXPECT_EQ(q1.stats().backlog_bytes, base1);
}

TEST(StandaloneQueue, DestructionDrainsThenJoins) {
  std::atomic<int> ran{0};
  {
    Queue q("test", nullptr);
    q.pause();
    EXPECT_EQ(q.push("count", [&] { ++ran; }), 1u);  // sequence numbers start at 1
    q.push("injected_fault", [] { throw std::runtime_error("left for no one"); });  // never rethrown: no crash
    for (int i = 1; i < 100; ++i) q.push("count", [&] { ++ran; });
    EXPECT_EQ(ran, 0);
    EXPECT_EQ(q.stats().depth, 101u);
  }  // still paused: the destructor resumes, drains every op, then joins
  EXPECT_EQ(ran, 100);
}


// --- errors cross queues (docs/design.md §5) ----------------------------------------------

// A failed op on cpu:0 poisons what it should have written: the copy to
// cpu:1 and every op after it there do not run, and each blocker on any
// tensor downstream rethrows the original error (op, sequence, device).
TEST(QueueErrors, AFailureOnOneQueueFailsEverythingDownstreamOnAnother) {
  ScopedBlocking async(false);
  const Device d0 = Device::cpu(0), d1 = Device::cpu(1);
  Tensor x = full({1}, 1.f, d0);  // one element: item() is among the blockers
  Tensor bad = empty({1}, d0);
  uint64_t failed_seq = 0;
  std::atomic<int> ran_downstream{0};
  Tensor y, z;
  {
    PausedQueue p0(d0);  // everything is queued before anything runs
    failed_seq = detail::enqueue(context(d0), "test_fault", {&x}, {&bad}, {},
                                 [](Backend&, const OpArgs&) { throw std::runtime_error("injected failure"); });
    y = copy_to(bad, d1);      // cpu:1 waits for cpu:0's op
    z = add_scalar(y, 1.f);    // further downstream on cpu:1
    Tensor w = empty({1}, d1);
    detail::enqueue(context(d1), "test_downstream", {&z}, {&w}, {detail::pointer_bits(&ran_downstream)},
                    [](Backend&, const OpArgs& k) { ++*k.scalar_ptr<std::atomic<int>>(0); });
    y = Tensor();
  }
  for (const Blocker& b : kBlockers) {
    // waitall() waits on no tensor: it reports a kept failure once, and the
    // first blocker here reported this one already (see the end of the test).
    if (std::string(b.name) == "waitall") continue;
    SCOPED_TRACE(b.name);
    try {
      b.call(z);
      ADD_FAILURE() << b.name << " on a tensor downstream of a failed op returned normally";
    } catch (const KernelError& e) {
      EXPECT_EQ(e.op, "test_fault");
      EXPECT_EQ(e.seq, failed_seq);
      EXPECT_EQ(e.device, "cpu:0");
      EXPECT_NE(std::string(e.what()).find("injected failure"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(ran_downstream, 0) << "an op whose input failed upstream ran";
  // Reported once: the other queues forget the same error; both keep working.
  EXPECT_NO_THROW(waitall());
  EXPECT_EQ(add_scalar(copy_to(x, d1), 1.f).item(), 2.f);
  // Writing the failed buffer again clears its failure.
  copy_(bad, x);
  EXPECT_EQ(bad.to_host(), std::vector<float>{1.f});
}

TEST(QueueErrors, AnUnrelatedTensorOnTheOtherQueueIsNotAffected) {
  ScopedBlocking async(false);
  const Device d0 = Device::cpu(0), d1 = Device::cpu(1);
  Tensor x = full({2}, 1.f, d0), bad = empty({2}, d0);
  detail::enqueue(context(d0), "test_fault", {&x}, {&bad}, {},
                  [](Backend&, const OpArgs&) { throw std::runtime_error("injected failure"); });
  Tensor fine = full({2}, 4.f, d1);
  bad = Tensor();
  // Not downstream of the failure: cpu:1's own tensor reads back normally ...
  const Tensor y = add_scalar(fine, 1.f);
  context(d1).queue.wait_all();
  EXPECT_EQ(storage(y)->error(), nullptr);
  // ... and the failure still surfaces at the global blocker.
  EXPECT_THROW(waitall(), KernelError);
  EXPECT_EQ(y.to_host(), std::vector<float>(2, 5.f));
}

// --- launched and completed --------------------------------------------------------

TEST(QueueStatsCpu, LaunchedAndCompletedCountOpsThatRan) {
  ScopedBlocking async(false);
  Queue& q = context(Device::cpu(0)).queue;
  q.wait_all();
  const QueueStats s0 = q.stats();
  EXPECT_EQ(s0.launched, s0.pushed);
  EXPECT_EQ(s0.completed, s0.pushed);
  EXPECT_EQ(s0.unlaunched, 0u);
  uint64_t last = 0;
  {
    PausedQueue paused(Device::cpu(0));
    for (int i = 0; i < 3; ++i) last = q.push("noop", [] {});
    const QueueStats s = q.stats();
    EXPECT_EQ(s.launched, s0.launched);
    EXPECT_EQ(s.completed, s0.completed);
    EXPECT_EQ(s.unlaunched, 3u);
    EXPECT_EQ(s.depth, 3u);
    EXPECT_FALSE(q.launched(last));
    EXPECT_FALSE(q.complete(last));
  }
  q.wait_for(last);
  const QueueStats s = q.stats();
  EXPECT_TRUE(q.launched(last));
  EXPECT_TRUE(q.complete(last));
  EXPECT_EQ(s.launched, last);
  EXPECT_EQ(s.completed, last);  // on the CPU a launched op has finished
  EXPECT_EQ(s.unlaunched, 0u);
  EXPECT_EQ(s.depth, 0u);
}

// busy_s counts the time kernels ran (what the throughput model takes as the
// device's time), not the time the worker slept or the ops waited; held_s
// the time a push waited for back-pressure.
TEST(QueueStatsCpu, BusyTimeIsKernelTimeAndHeldTimeIsBackPressure) {
  ScopedBlocking async(false);
  Queue& q = context(Device::cpu(0)).queue;
  q.wait_all();
  const QueueStats s0 = q.stats();
  const auto w0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) q.push("sleep 30ms", [] { std::this_thread::sleep_for(30ms); });
  q.wait_all();
  const double working = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  std::this_thread::sleep_for(300ms);  // idle: not busy
  const QueueStats s1 = q.stats();
  EXPECT_GE(s1.busy_s - s0.busy_s, 0.090);
  // The idle 300 ms did not count: the busy time lies inside the time the
  // three ops took, however long a loaded machine stretched that.
  EXPECT_LE(s1.busy_s - s0.busy_s, working);
  EXPECT_EQ(s1.held_s, s0.held_s);                  // nothing was held back

  set_max_pending(1, 0);
  struct Unbound {
    ~Unbound() { set_max_pending(0, 0); }
  } unbound;
  const auto t0 = std::chrono::steady_clock::now();
  q.push("sleep 40ms", [] { std::this_thread::sleep_for(40ms); });
  q.push("second", [] {});  // waits until the first was launched (a bound of one pending op)
  q.push("third", [] {});   // and this one until the second was
  const double pushed_in = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  q.wait_all();
  const double held = q.stats().held_s - s1.held_s;
  EXPECT_GE(held, 0.0);
  EXPECT_LE(held, pushed_in + 1e-3);  // never more than the pushes took
  EXPECT_GE(held, 0.035);             // the second push waited for the 40 ms kernel to end
}

// wakes counts the pushes that found the worker asleep: none onto a paused
// queue or a busy worker, one for a push after the worker caught up and
// slept (it sleeps once it has nothing to run; the test lets it get there,
// trying again while a loaded machine has not yet put it to sleep).
TEST(QueueStatsCpu, WakesCountThePushesThatFoundTheWorkerAsleep) {
  ScopedBlocking async(false);
  Queue& q = context(Device::cpu(0)).queue;
  q.wait_all();
  const QueueStats s0 = q.stats();
  {
    PausedQueue paused(Device::cpu(0));
    for (int i = 0; i < 5; ++i) q.push("paused", [] {});
    EXPECT_EQ(q.stats().wakes, s0.wakes);  // a paused worker is not woken
  }
  q.wait_all();
  const QueueStats s1 = q.stats();
  std::atomic<bool> started{false};
  q.push("busy 50ms", [&] {
    started = true;
    std::this_thread::sleep_for(50ms);
  });
  while (!started) std::this_thread::yield();
  for (int i = 0; i < 5; ++i) q.push("behind it", [] {});  // the worker is busy: none wakes it
  q.wait_all();
  const QueueStats s2 = q.stats();
  EXPECT_LE(s2.wakes - s1.wakes, 1u);  // the first push's wake, if the worker slept by then
  uint64_t before = s2.wakes;
  bool woke = false;
  for (int attempt = 0; attempt < 100 && !woke; ++attempt) {
    std::this_thread::sleep_for(5ms);  // the worker caught up: it sleeps
    before = q.stats().wakes;
    q.push("after a sleep", [] {});
    q.wait_all();
    woke = q.stats().wakes == before + 1;
  }
  EXPECT_TRUE(woke) << "no push found the worker asleep";
  EXPECT_GE(q.stats().wake_s, s0.wake_s);
}

// --- device timers -----------------------------------------------------------------

// A timer is a point on the device's timeline: marking returns at once, the
// reading is the device's time between the two ops (30 ms of kernel here),
// whatever the frontend did meanwhile (it slept 60 ms before reading).
// The device's time between the marks is at least the op's 30 ms and at
// most the wall time from releasing the queue to seeing both marks reached,
// however loaded the machine; the frontend's sleep after that (longer than
// that wall time) is not counted.
TEST(DeviceTimerCpu, MeasuresTheDevicesTimeBetweenTwoPoints) {
  ScopedBlocking async(false);
  const Device d = Device::cpu(0);
  Queue& q = context(d).queue;
  q.wait_all();
  DeviceTimer a, b;
  std::chrono::steady_clock::time_point released;
  {
    PausedQueue paused(d);  // nothing runs while we mark
    a = DeviceTimer::mark(d);
    q.push("sleep 30ms", [] { std::this_thread::sleep_for(30ms); });
    b = DeviceTimer::mark(d);
    EXPECT_FALSE(a.reached());
    EXPECT_FALSE(b.reached());
    released = std::chrono::steady_clock::now();
  }
  q.wait_all();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - released).count();
  std::this_thread::sleep_for(std::chrono::duration<double>(2 * wall + 0.06));  // the device finished: not counted
  const double s = b.seconds_since(a);
  EXPECT_TRUE(a.reached());
  EXPECT_TRUE(b.reached());
  EXPECT_GE(s, 0.030);
  EXPECT_LE(s, wall) << "the frontend's sleep after the ops was counted";
  EXPECT_LE(a.seconds_since(a), 0.0);
  EXPECT_LT(a.seconds_since(b), 0.0);  // the other way round: negative
}

TEST(DeviceTimerCpu, UnsetOtherDeviceAndDroppedPointsAreErrors) {
  ScopedBlocking async(false);
  const DeviceTimer unset;
  EXPECT_FALSE(unset.reached());
  const DeviceTimer a = DeviceTimer::mark(Device::cpu(0));
  EXPECT_THROW(a.seconds_since(unset), Error);
  EXPECT_THROW(unset.seconds_since(a), Error);
  const DeviceTimer other = DeviceTimer::mark(Device::cpu(1));
  try {
    (void)other.seconds_since(a);
    ADD_FAILURE() << "points on two devices were compared";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("two timelines"), std::string::npos) << e.what();
  }
  DeviceTimer dropped;
  {
    PausedQueue paused(Device::cpu(0));
    dropped = DeviceTimer::mark(Device::cpu(0));
    EXPECT_GE(drop_pending(), 1u);
  }
  EXPECT_THROW(dropped.seconds_since(a), Error);
  waitall();
}

// --- asynchronous copies to the host -----------------------------------------------

TEST(HostCopyCpu, ReturnsAtOnceAndGetWaitsForTheCopy) {
  ScopedBlocking async(false);
  const Device d = Device::cpu(0);
  HostCopy c;
  {
    PausedQueue paused(d);
    Tensor x = full({1000}, 2.5f, d);
    c = x.to_host_async();  // queued behind the fill; x may go
    EXPECT_FALSE(c.ready()) << "the copy finished while its queue was paused";
  }
  const std::vector<float>& v = c.get();
  EXPECT_TRUE(c.ready());
  EXPECT_EQ(v, std::vector<float>(1000, 2.5f));
  EXPECT_EQ(&c.get(), &v);  // a second get() returns the same values without another wait
}

TEST(HostCopyCpu, AFailureUpstreamIsRethrownByGet) {
  ScopedBlocking async(false);
  const Device d = Device::cpu(0);
  Tensor x = full({2}, 1.f, d), bad = empty({2}, d);
  const uint64_t seq = detail::enqueue(context(d), "test_fault", {&x}, {&bad}, {},
                                       [](Backend&, const OpArgs&) { throw std::runtime_error("injected failure"); });
  HostCopy c = bad.to_host_async();
  try {
    c.get();
    ADD_FAILURE() << "get() on a copy of a failed tensor returned normally";
  } catch (const KernelError& e) {
    EXPECT_EQ(e.op, "test_fault");
    EXPECT_EQ(e.seq, seq);
  }
  EXPECT_NO_THROW(waitall());
}

TEST(HostCopyCpu, DestroyingAnUnreadCopyWaitsForIt) {
  ScopedBlocking async(false);
  const Device d = Device::cpu(0);
  Gate gate;
  std::atomic<bool> released{false};
  context(d).queue.push("gated", gate.waiter());
  {
    HostCopy c = full({64}, 1.f, d).to_host_async();
    OpenLater opener(gate, released);
  }  // ~HostCopy: the queue must not write into freed memory later
  EXPECT_TRUE(released);
  waitall();
}

// --- pausing -----------------------------------------------------------------------

TEST(QueuePauseCpu, PausesNestAndTheLastOneResumes) {
  ScopedBlocking async(false);
  const Device d = Device::cpu(0);
  std::atomic<bool> ran{false};
  {
    QueuePause outer(d);
    {
      QueuePause inner(d);
      context(d).queue.push("mark", [&] { ran = true; });
    }
    std::this_thread::sleep_for(20ms);  // the chance to run if the inner guard wrongly resumed
    EXPECT_FALSE(ran) << "the queue ran while an outer pause was alive";
  }
  context(d).queue.wait_all();
  EXPECT_TRUE(ran);
}

// Static storage for a pause that is never destroyed: no heap block for LSan
// to report when the child exits with it still alive.
alignas(QueuePause) unsigned char g_left_paused[sizeof(QueuePause)];

// An exception (or an exit) that leaves a pause behind must not hang the
// process at exit: the runtime resumes every queue before it drains.
TEST(QueuePauseDeathTest, ExitWithAQueueLeftPausedDrainsAndEnds) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        new (g_left_paused) QueuePause(Device::cpu(0));  // never destroyed
        context(Device::cpu(0)).queue.push("at exit", [] { std::fputs("the queued op ran at exit\n", stderr); });
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "the queued op ran at exit");
}

// --- a frontend's blocker poll (set_blocker_poll) and fork() ----------------------------

// What the poll throws ends the wait, untouched (never kept as the queue's
// error); the queued op stays queued and runs once the pause ends, and to_host's
// copy, abandoned by its waiter, writes into memory of its own.
TEST(BlockerPoll, ItsWaitInterruptedEndsTheWaitAndTheQueuedWorkRunsOn) {
  ScopedBlocking async(false);
  const Device d = Device::cpu(5);
  Tensor x = ones({4}, d);
  x.wait_to_read();
  static std::atomic<int> polls{0};
  set_blocker_poll([](const std::string& queue, bool paused, PolledWait) {
    ++polls;
    if (paused) throw WaitInterrupted("a paused wait on " + queue);
  });
  Tensor y;
  {
    QueuePause pause(d);
    y = scale(x, 2.f);
    EXPECT_THROW(y.to_host(), WaitInterrupted);
    EXPECT_THROW(y.wait_to_read(), WaitInterrupted);
    try {
      waitall();
      ADD_FAILURE() << "waitall() waited on a paused queue";
    } catch (const WaitInterrupted& e) {
      EXPECT_STREQ(e.what(), "a paused wait on cpu:5");
    }
  }
  set_blocker_poll(nullptr);
  EXPECT_GE(polls.load(), 3);
  EXPECT_EQ(y.to_host(), std::vector<float>(4, 2.f));
  EXPECT_NO_THROW(waitall()) << "an interrupted wait was kept as an error";
}

// A push that back-pressure holds is polled as a blocker is (PolledWait::Push):
// what the poll throws leaves the push with it, nothing is queued, and the
// pins the push took are undone (the backlog as before, and empty once the
// queue has run), under either way of counting an output's bytes.
TEST(BlockerPoll, APushHeldByBackPressureIsPolledAndQueuesNothing) {
  ScopedBlocking async(false);
  const Device d = Device::cpu(7);
  Tensor x = ones({256}, d);
  x.wait_to_read();
  static std::atomic<int> push_polls{0};
  set_blocker_poll([](const std::string& queue, bool paused, PolledWait wait) {
    if (wait == PolledWait::Push) ++push_polls;
    if (paused) throw WaitInterrupted("a held push on " + queue);
  });
  for (AllocPolicy policy : {AllocPolicy::Stream, AllocPolicy::Run}) {
    SCOPED_TRACE(policy == AllocPolicy::Run ? "run" : "stream");
    ScopedAllocPolicy alloc(policy);
    push_polls = 0;
    Tensor y, z;
    {
      ScopedMaxPending bound(/*ops=*/2, /*bytes=*/0);
      QueuePause pause(d);
      y = scale(x, 2.f);
      z = scale(y, 2.f);  // two ops pending: the bound
      const QueueStats before = queue_stats(d);
      try {
        Tensor w = scale(z, 2.f);
        ADD_FAILURE() << "a push waited on a paused queue past its bound";
      } catch (const WaitInterrupted& e) {
        EXPECT_STREQ(e.what(), "a held push on cpu:7");
      }
      const QueueStats after = queue_stats(d);
      EXPECT_EQ(after.pushed, before.pushed) << "the interrupted push queued nothing";
      EXPECT_EQ(after.backlog_bytes, before.backlog_bytes);
      EXPECT_EQ(after.unallocated_bytes, before.unallocated_bytes);
      EXPECT_GT(before.backlog_bytes + before.unallocated_bytes, 0u);
    }
    EXPECT_GE(push_polls.load(), 1);
    EXPECT_EQ(z.to_host(), std::vector<float>(256, 4.f));
    EXPECT_NO_THROW(waitall()) << "an interrupted push was kept as an error";
    const QueueStats done = queue_stats(d);
    EXPECT_EQ(done.backlog_bytes, 0u);
    EXPECT_EQ(done.unallocated_bytes, 0u);
    EXPECT_EQ(scale(z, 2.f).to_host(), std::vector<float>(256, 8.f)) << "the queue pushes on";
  }
  set_blocker_poll(nullptr);
}

// A fork drains the queues first (no worker inside a kernel): the parent goes
// on; the child, whose workers did not survive, gets one Error at first use.
TEST(Fork, TheParentWorksOnAndTheChildGetsOneErrorAtFirstUse) {
  ScopedBlocking async(false);
  const Device d = Device::cpu(6);
  Tensor a = ones({64, 64}, d);
  for (int i = 0; i < 10; ++i) a = scale(matmul(a, ones({64, 64}, d)), 1.f / 64);
  const pid_t pid = ::fork();
  if (pid == 0) {
    int code = 3;
    try {
      ones({2}, d);
      code = 1;
    } catch (const Error& e) {
      code = std::string(e.what()).find("a fork() of one that used asyncmlp") != std::string::npos ? 0 : 2;
    }
    std::_Exit(code);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the child's first use did not raise; 2: another message";
  EXPECT_EQ(a.to_host(), std::vector<float>(64 * 64, 1.f));
  EXPECT_EQ(sum(ones({3, 3}, d)).item(), 9.f);
}

// drop_pending(): queued ops never run, their outputs carry Dropped, and
// waitall() reports nothing; the queue runs new work normally afterwards.
TEST(DropPending, QueuedOpsNeverRunAndNoBlockerReportsTheDrop) {
  const Device d = Device::cpu(7);
  waitall();
  std::atomic<int> ran{0};
  Tensor x;
  {
    PausedQueue paused(d);
    x = full({1}, 1.f, d);
    for (int i = 0; i < 5; ++i) context(d).queue.push("count", [&] { ran++; });
    EXPECT_EQ(drop_pending(), 6u);
  }
  EXPECT_NO_THROW(waitall());
  EXPECT_EQ(ran.load(), 0);
  EXPECT_THROW(x.item(), Dropped);
  Tensor y = full({16}, 2.f, d);
  EXPECT_EQ(sum(y).item(), 32.f);
  context(d).queue.push("count", [&] { ran++; });
  waitall();
  EXPECT_EQ(ran.load(), 1);
}

}  // namespace
}  // namespace amlp::testing
