// Covers framework/core/queue/queue.cpp, framework/core/tensor/enqueue.cpp, framework/core/memory/memory.cpp, framework/core/queue/backlog.cpp (under load).
// the queues under load: many interleaved pushes
// on two queues (cpu:0, cpu:1) with random cross-queue dependencies
// (copy_to between the devices, ops that read tensors the other device
// wrote, in-place writes of buffers the other queue still reads) and kernels
// that throw at random positions, from a fixed seed. Every value is also
// computed on the side in plain C++, and every failure is tracked:
//   - a blocker on a tensor downstream of a failed op throws KernelError
//     naming the original op (its name, sequence number and device);
//   - a blocker on a tensor not downstream reads the values computed on the
//     side, or first reports a failure not reported yet (the next blocker
//     reports a kept error, docs/design.md §5), never one reported already;
//   - nothing deadlocks (a watchdog thread aborts with a message);
//   - when every tensor is dropped and waitall() has returned, every buffer
//     is back in its pool (bytes_in_use at its baseline, no backlog).
// The frontend API is single-threaded (docs/design.md §11: one thread drives
// each device; the buffers' bookkeeping is that thread's alone), so the
// ops come from one thread, interleaved across both queues. Two more threads
// push through the engine's thread-safe entry point, Queue::push (kernels
// without buffers), and the watchdog reads the statistics meanwhile.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "framework/core/tensor/enqueue.h"
#include "sanitized.h"
#include "test_util.h"


namespace amlp::testing {
namespace {

#if AMLP_SANITIZED
constexpr int kRounds = 100;  // sanitizers run several times slower: same mix, a quarter of the rounds
#else
constexpr int kRounds = 400;
#endif
constexpr int kOpsPerRound = 400;
constexpr int64_t kN = 16;  // elements per tensor
constexpr size_t kMaxLive = 24;
constexpr auto kWatchdog = std::chrono::seconds(120);

const char* const kFaultOp = "stress_fault";  // names outlive the queue: static strings
const char* const kCrossOp = "stress_cross";

// Aborts the process with a message if the test does not finish in time (a
// deadlock would otherwise hang the suite until CTest's timeout). While it
// waits it reads every queue's and pool's statistics, as a monitor would.
class Watchdog {
 public:
  explicit Watchdog(std::atomic<uint64_t>& progress) : progress_(progress), t_([this] { loop(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      done_ = true;
    }
    cv_.notify_all();
    t_.join();
  }

 private:
  void loop() {
    const auto deadline = std::chrono::steady_clock::now() + kWatchdog;
    std::unique_lock<std::mutex> lk(mu_);
    while (!done_) {
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr,
                     "queue stress: watchdog: not finished after %lld s (deadlock?) at frontend op %llu; "
                     "cpu:0 pushed %llu launched %llu, cpu:1 pushed %llu launched %llu\n",
                     static_cast<long long>(kWatchdog.count()), static_cast<unsigned long long>(progress_.load()),
                     static_cast<unsigned long long>(queue_stats(Device::cpu(0)).pushed),
                     static_cast<unsigned long long>(queue_stats(Device::cpu(0)).launched),
                     static_cast<unsigned long long>(queue_stats(Device::cpu(1)).pushed),
                     static_cast<unsigned long long>(queue_stats(Device::cpu(1)).launched));
        std::fflush(stderr);
        std::abort();
      }
      lk.unlock();
      for (Device d : {Device::cpu(0), Device::cpu(1)}) {  // thread-safe readers, polled concurrently
        (void)queue_stats(d);
        (void)memory_stats(d);
      }
      lk.lock();
      cv_.wait_for(lk, std::chrono::milliseconds(2));
    }
  }

  std::atomic<uint64_t>& progress_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread t_;
};

// A value of the workload: its tensor, and either what it must hold or the
// injected failure it is downstream of.
struct Val {
  Tensor t;
  std::vector<float> expect;
  int fault = -1;       // index into Stress::faults_, or -1: not downstream of a failure
  bool pinned = false;  // a failed op's own output, read at the end of the round
};

struct Fault {
  std::string device;
  uint64_t seq;
  bool reported = false;
};

bool same_values(const std::vector<float>& got, const std::vector<float>& want, std::string* why) {
  if (got.size() != want.size()) return *why = "size differs", false;
  for (size_t i = 0; i < got.size(); ++i) {
    const float g = got[i], w = want[i];
    const bool ok = std::isfinite(w) ? std::fabs(g - w) <= 1e-4f * std::max(1.f, std::fabs(w)) : (g == w);
    if (!ok) return *why = detail::concat("element ", i, ": got ", g, ", want ", w), false;
  }
  return true;
}

class Stress {
 public:
  explicit Stress(uint32_t seed) : rng_(seed) {}

  uint64_t frontend_ops = 0, blockers = 0, downstream_reads = 0, clean_reads = 0, pending_reports = 0;
  std::atomic<uint64_t> progress{0};
  std::atomic<uint64_t> kernels_failed{0};  // faults the kernels actually threw
  std::vector<Fault> faults_;

  void round() {
    for (int i = 0; i < kOpsPerRound; ++i) {
      step();
      progress = ++frontend_ops;
    }
    // The end of a round: waitall() until it has reported what was kept,
    // then every failed op's own output names it.
    drain();
    for (Val& v : live_)
      if (v.pinned) read(v);
    live_.erase(std::remove_if(live_.begin(), live_.end(), [](const Val& v) { return v.pinned; }), live_.end());
  }

  void finish() {
    live_.clear();
    drain();
  }

  size_t live() const { return live_.size(); }

 private:
  Device pick_device() { return Device::cpu(static_cast<int>(pick(0, 1))); }
  size_t pick(size_t lo, size_t hi) { return std::uniform_int_distribution<size_t>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  Val& any() { return live_[pick(0, live_.size() - 1)]; }

  static float max_abs(const Val& v) {
    float m = 0;
    for (float x : v.expect) m = std::max(m, std::fabs(x));
    return m;
  }

  void add_live(Val v) {
    live_.push_back(std::move(v));
    while (live_.size() > kMaxLive) {  // drop a handle, often while ops that use it are pending
      const size_t i = pick(0, live_.size() - 1);
      if (live_[i].pinned) continue;
      live_.erase(live_.begin() + static_cast<long>(i));
    }
  }

  // What an op reading `ins` (in declaration order) carries when one of them
  // is downstream of a failure: the first such input's failure.
  static int inherited(std::initializer_list<const Val*> ins) {
    for (const Val* v : ins)
      if (v->fault >= 0) return v->fault;
    return -1;
  }

  void step() {
    if (live_.size() < 4) return leaf();
    const size_t what = pick(0, 99);
    if (what < 8) return leaf();
    if (what < 26) return unary();
    if (what < 44) return binary();
    if (what < 56) return move_across();
    if (what < 78) return cross();
    if (what < 90) return overwrite();
    return blocker();
  }

  void leaf() {
    Val v;
    const Device d = pick_device();
    if (chance(0.5)) {
      v.expect.resize(kN);
      for (float& x : v.expect) x = static_cast<float>(static_cast<int>(pick(0, 16)) - 8);
      v.t = from_host({kN}, v.expect.data(), d);
    } else {
      const float c = static_cast<float>(static_cast<int>(pick(0, 10)) - 5);
      v.t = full({kN}, c, d);
      v.expect.assign(kN, c);
    }
    add_live(std::move(v));
  }

  void unary() {
    const Val& a = any();
    Val v;
    v.fault = a.fault;
    v.expect = a.expect;
    if (max_abs(a) > 1e4f) {  // keep magnitudes where the side computation is exact
      v.t = scale(a.t, 1.f / 1024);
      for (float& x : v.expect) x *= 1.f / 1024;
    } else {
      switch (pick(0, 2)) {
        case 0: {
          static const float kScales[] = {-1.f, 0.5f, 2.f};
          const float s = kScales[pick(0, 2)];
          v.t = scale(a.t, s);
          for (float& x : v.expect) x *= s;
          break;
        }
        case 1: {
          const float s = static_cast<float>(static_cast<int>(pick(0, 6)) - 3);
          v.t = add_scalar(a.t, s);
          for (float& x : v.expect) x += s;
          break;
        }
        default:
          v.t = relu(a.t);
          for (float& x : v.expect) x = x > 0.f ? x : 0.f;
      }
    }
    add_live(std::move(v));
  }

  // add/sub on a's device; b is copied over first when it lives on the other one.
  void binary() {
    const Val a = any(), b = any();
    Tensor bt = b.t.device() == a.t.device() ? b.t : copy_to(b.t, a.t.device());
    const bool plus = chance(0.5);
    Val v;
    v.t = plus ? add(a.t, bt) : sub(a.t, bt);
    v.fault = inherited({&a, &b});
    v.expect.resize(kN);
    for (int64_t i = 0; i < kN; ++i) v.expect[i] = plus ? a.expect[i] + b.expect[i] : a.expect[i] - b.expect[i];
    add_live(std::move(v));
  }

  void move_across() {
    const Val& a = any();
    const Device to = a.t.device() == Device::cpu(0) ? Device::cpu(1) : Device::cpu(0);
    Val v;
    v.t = copy_to(a.t, to);
    v.fault = a.fault;
    v.expect = a.expect;
    add_live(std::move(v));
  }

  // y = a + 2b on a random device, a and b from either: the op's queue waits
  // for the other queue's writers. Some of these throw instead (fixed seed).
  void cross() {
    const Val a = any(), b = any();
    const Device d = pick_device();
    Val v;
    v.t = empty({kN}, d);
    const bool fail = chance(0.04);
    v.fault = inherited({&a, &b});
    const bool fires = fail && v.fault < 0;  // an op with a failed input does not run
    const int fault_no = static_cast<int>(faults_.size());
    std::atomic<uint64_t>* failed = &kernels_failed;
    const uint64_t seq = detail::enqueue(context(d), fail ? kFaultOp : kCrossOp, {&a.t, &b.t}, {&v.t},
                                         {fail, static_cast<uint64_t>(fault_no), detail::pointer_bits(failed)},
                                         [](Backend&, const OpArgs& k) {
                                           if (k.scalar_bool(0)) {
                                             k.scalar_ptr<std::atomic<uint64_t>>(2)->fetch_add(1);
                                             throw std::runtime_error(
                                                 detail::concat("injected fault #", k.scalar_int(1)));
                                           }
                                           const float* x = k.in(0);
                                           const float* y = k.in(1);
                                           float* out = k.out(0);
                                           for (int64_t i = 0; i < kN; ++i) out[i] = x[i] + 2.f * y[i];
                                         });
    if (fires) {
      faults_.push_back({d.str(), seq});
      v.fault = fault_no;
      v.pinned = true;
    }
    v.expect.resize(kN);
    for (int64_t i = 0; i < kN; ++i) v.expect[i] = a.expect[i] + 2.f * b.expect[i];
    add_live(std::move(v));
  }

  // copy_(dst, src) on one device: a write to a buffer the other queue may
  // still be reading (it must wait for that read), which also clears a
  // failure dst carried, or gives it src's.
  void overwrite() {
    Val& dst = any();
    if (dst.pinned) return;
    std::vector<size_t> same;
    for (size_t i = 0; i < live_.size(); ++i)
      if (&live_[i] != &dst && live_[i].t.device() == dst.t.device()) same.push_back(i);
    if (same.empty()) return;
    const Val& src = live_[same[pick(0, same.size() - 1)]];
    copy_(dst.t, src.t);
    dst.expect = src.expect;
    dst.fault = src.fault;
  }

  void blocker() {
    ++blockers;
    if (chance(0.1)) return drain();
    read(any());
  }

  // A failure a blocker reported that is not the one `expected_fault` (-1:
  // none): it must be one not reported yet.
  void expect_pending(const KernelError& e, const char* where) {
    ASSERT_EQ(e.op, kFaultOp) << where << ": an error that no injected fault made: " << e.what();
    for (Fault& f : faults_)
      if (f.seq == e.seq && f.device == e.device) {
        EXPECT_FALSE(f.reported) << where << ": reported a second time: " << e.what();
        f.reported = true;
        ++pending_reports;
        return;
      }
    ADD_FAILURE() << where << ": an error no tracked fault made: " << e.what();
  }

  // Reads `v` with a random blocker and checks what it gives.
  void read(const Val& v) {
    const int kind = static_cast<int>(pick(0, 3));
    // A value not downstream may first report kept failures, one per try.
    for (size_t attempt = 0; attempt <= faults_.size() + 1; ++attempt) {
      std::vector<float> got;
      try {
        switch (kind) {
          case 0:
            v.t.wait_to_read();
            got = v.t.to_host();
            break;
          case 1: {
            HostCopy h = v.t.to_host_async();
            got = h.get();
            break;
          }
          case 2: {
            const float s = sum(v.t).item();
            float want = 0;
            for (float x : v.expect) want += x;
            got = {s};
            if (v.fault < 0) {
              std::string why;
              EXPECT_TRUE(same_values(got, {want}, &why)) << "sum of a clean value: " << why;
              ++clean_reads;
              return;
            }
            break;
          }
          default:
            got = v.t.to_host();
        }
      } catch (const KernelError& e) {
        if (v.fault >= 0) {
          Fault& f = faults_[v.fault];
          EXPECT_EQ(e.op, kFaultOp) << e.what();
          EXPECT_EQ(e.seq, f.seq) << "a downstream blocker did not name the original op: " << e.what();
          EXPECT_EQ(e.device, f.device) << e.what();
          f.reported = true;
          ++downstream_reads;
          return;
        }
        expect_pending(e, "a blocker on a value not downstream of any failure");
        if (::testing::Test::HasFatalFailure()) return;
        continue;
      }
      if (v.fault >= 0) {
        ADD_FAILURE() << "a blocker on a value downstream of fault seq " << faults_[v.fault].seq << " on "
                      << faults_[v.fault].device << " returned values";
        return;
      }
      std::string why;
      EXPECT_TRUE(same_values(got, v.expect, &why)) << why;
      ++clean_reads;
      return;
    }
    ADD_FAILURE() << "a blocker kept throwing";
  }

  void drain() {
    for (size_t attempt = 0; attempt <= faults_.size() + 1; ++attempt) {
      try {
        waitall();
        return;
      } catch (const KernelError& e) {
        expect_pending(e, "waitall()");
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
    ADD_FAILURE() << "waitall() kept throwing";
  }

  std::mt19937 rng_;
  std::vector<Val> live_;
};

// Other threads pushing kernels without buffers onto both queues through
// Queue::push, the engine's thread-safe entry point, until stopped.
class SidePushers {
 public:
  explicit SidePushers(int threads) {
    for (int i = 0; i < threads; ++i)
      ts_.emplace_back([this, i] {
        std::mt19937 rng(1000 + i);
        Queue* qs[] = {&context(Device::cpu(0)).queue, &context(Device::cpu(1)).queue};
        while (!stop_.load()) {
          qs[rng() % 2]->push("stress_side", Queue::Thunk([this] { ran_.fetch_add(1); }));
          pushed_.fetch_add(1);
          if (rng() % 2 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 100));
        }
      });
  }
  ~SidePushers() { stop(); }
  void stop() {
    stop_ = true;
    for (std::thread& t : ts_)
      if (t.joinable()) t.join();
  }
  uint64_t pushed() const { return pushed_.load(); }
  uint64_t ran() const { return ran_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> pushed_{0}, ran_{0};
  std::vector<std::thread> ts_;
};

TEST(QueueStress, RandomCrossQueueWorkWithInjectedFaults) {
  ScopedBlocking async(false);
  const Device d0 = Device::cpu(0), d1 = Device::cpu(1);
  waitall();
  const size_t base0 = memory_stats(d0).bytes_in_use, base1 = memory_stats(d1).bytes_in_use;
  const uint64_t pushed0 = queue_stats(d0).pushed, pushed1 = queue_stats(d1).pushed;
  const auto t0 = std::chrono::steady_clock::now();

  Stress s(20240608);
  uint64_t side_pushed = 0, side_ran = 0;
  {
    Watchdog dog(s.progress);
    SidePushers side(2);
    for (int r = 0; r < kRounds && !::testing::Test::HasFatalFailure(); ++r) s.round();
    side.stop();
    s.finish();
    waitall();
    side_pushed = side.pushed();
    side_ran = side.ran();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  EXPECT_EQ(s.live(), 0u);
  EXPECT_EQ(side_ran, side_pushed) << "a kernel pushed from another thread did not run";
  EXPECT_EQ(s.kernels_failed.load(), s.faults_.size()) << "faults thrown by kernels vs faults the model expected";
  for (const Fault& f : s.faults_) EXPECT_TRUE(f.reported) << "fault seq " << f.seq << " on " << f.device;
  EXPECT_GE(s.faults_.size(), size_t(kRounds / 8));  // the seed makes about one fault per 3 rounds
  EXPECT_GT(s.downstream_reads, 10u);
  EXPECT_GT(s.clean_reads, uint64_t(2 * kRounds));
  // Every buffer is back in its pool; no op is left holding one.
  for (Device d : {d0, d1}) {
    const QueueStats q = queue_stats(d);
    EXPECT_EQ(q.pushed, q.launched) << d.str();
    EXPECT_EQ(q.backlog_bytes, 0u) << d.str();
  }
  EXPECT_EQ(memory_stats(d0).bytes_in_use, base0) << "cpu:0 buffers not back in the pool";
  EXPECT_EQ(memory_stats(d1).bytes_in_use, base1) << "cpu:1 buffers not back in the pool";

  const uint64_t queued = queue_stats(d0).pushed - pushed0 + queue_stats(d1).pushed - pushed1;
  ::testing::Test::RecordProperty("frontend_calls", std::to_string(s.frontend_ops));
  ::testing::Test::RecordProperty("ops_queued", std::to_string(queued));
  ::testing::Test::RecordProperty("side_thread_pushes", std::to_string(side_pushed));
  ::testing::Test::RecordProperty("injected_faults", std::to_string(s.faults_.size()));
  ::testing::Test::RecordProperty("downstream_reads", std::to_string(s.downstream_reads));
  ::testing::Test::RecordProperty("blockers", std::to_string(s.blockers));
  std::printf(
      "[ stress   ] %d rounds, %llu frontend calls, %llu ops queued on cpu:0+cpu:1 (%llu of them pushed by 2 other "
      "threads), %zu injected faults, %llu downstream reads named the failed op, %llu reports of kept errors, "
      "%llu clean reads, %llu blockers, %.1f s\n",
      kRounds, static_cast<unsigned long long>(s.frontend_ops), static_cast<unsigned long long>(queued),
      static_cast<unsigned long long>(side_pushed), s.faults_.size(),
      static_cast<unsigned long long>(s.downstream_reads), static_cast<unsigned long long>(s.pending_reports),
      static_cast<unsigned long long>(s.clean_reads), static_cast<unsigned long long>(s.blockers), secs);
}

// Two failures on two queues, neither read: waitall() reports one, the next
// waitall() the other; none is dropped (docs/design.md §5: kept until a blocker takes it).
TEST(QueueStress, WaitallReportsEveryQueuesKeptErrorInTurn) {
  ScopedBlocking async(false);
  waitall();
  const Device d0 = Device::cpu(0), d1 = Device::cpu(1);
  Tensor y0 = empty({4}, d0), y1 = empty({4}, d1);
  const uint64_t s0 = detail::enqueue(context(d0), kFaultOp, {}, {&y0}, {}, [](Backend&, const OpArgs&) {
    throw std::runtime_error("fault on cpu:0");
  });
  const uint64_t s1 = detail::enqueue(context(d1), kFaultOp, {}, {&y1}, {}, [](Backend&, const OpArgs&) {
    throw std::runtime_error("fault on cpu:1");
  });
  std::vector<std::string> seen;
  for (int i = 0; i < 3; ++i) {
    try {
      waitall();
      break;
    } catch (const KernelError& e) {
      seen.push_back(e.device + "#" + std::to_string(e.seq));
    }
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"cpu:0#" + std::to_string(s0), "cpu:1#" + std::to_string(s1)}));
  EXPECT_NO_THROW(waitall());
}

// A failure reported through a downstream tensor on the other queue is not
// reported again by a blocker on a clean tensor of the failed op's queue.
TEST(QueueStress, AFailureReportedDownstreamIsNotReportedAgain) {
  ScopedBlocking async(false);
  waitall();
  const Device d0 = Device::cpu(0), d1 = Device::cpu(1);
  Tensor bad = empty({4}, d0);
  const uint64_t s0 = detail::enqueue(context(d0), kFaultOp, {}, {&bad}, {}, [](Backend&, const OpArgs&) {
    throw std::runtime_error("fault on cpu:0");
  });
  Tensor down = copy_to(bad, d1);  // fails on cpu:1 with cpu:0's error; both queues kept it
  try {
    down.wait_to_read();
    ADD_FAILURE() << "the downstream tensor read fine";
  } catch (const KernelError& e) {
    EXPECT_EQ(e.seq, s0);
    EXPECT_EQ(e.device, "cpu:0");
  }
  Tensor clean = full({4}, 3.f, d0);
  EXPECT_EQ(clean.to_host(), std::vector<float>(4, 3.f)) << "the reported failure came back";
  EXPECT_NO_THROW(waitall());
}

}  // namespace
}  // namespace amlp::testing
