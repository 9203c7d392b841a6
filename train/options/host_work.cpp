#include "train/options/host_work.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>

#include "framework/parse.h"

namespace amlp::train {

std::string to_string(HostWorkKind k) { return k == HostWorkKind::Wait ? "wait" : "compute"; }

namespace {

// A sink the spinning loop writes to, so the compiler keeps its arithmetic.
std::atomic<uint64_t> g_spin_sink{0};

timespec plus_ns(timespec t, int64_t ns) {
  t.tv_sec += static_cast<time_t>(ns / 1000000000);
  t.tv_nsec += static_cast<long>(ns % 1000000000);
  if (t.tv_nsec >= 1000000000) t.tv_nsec -= 1000000000, ++t.tv_sec;
  return t;
}

bool before(const timespec& a, const timespec& b) {
  return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}

}  // namespace

bool do_host_work(const HostWork& w, const std::atomic<int>* stop) {
  if (w.ns <= 0) return true;
  const auto stopped = [stop] { return stop && stop->load(std::memory_order_relaxed) != 0; };
  if (w.kind == HostWorkKind::Wait) {
    // An absolute deadline: a wake-up that comes early (a signal) sleeps again
    // for what is left; one that comes late is the cost of sleeping. With a
    // stop flag the sleep goes in slices, the flag read between them.
    timespec deadline{};
    ::clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline = plus_ns(deadline, w.ns);
    for (;;) {
      if (stopped()) return false;
      timespec until = deadline;
      if (stop) {
        timespec now{};
        ::clock_gettime(CLOCK_MONOTONIC, &now);
        const timespec slice = plus_ns(now, kHostWorkStopPollNs);
        if (before(slice, deadline)) until = slice;
      }
      while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr) == EINTR) {
      }
      if (!before(until, deadline)) return true;
    }
  }
  // Compute: integer work on this core until the deadline (the clock and the
  // stop flag read every 256 rounds, ~1 µs).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(w.ns);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  bool done = true;
  do {
    for (int i = 0; i < 256; ++i) x ^= (x << 13), x ^= (x >> 7), x ^= (x << 17);  // xorshift
    if (stopped()) {
      done = false;
      break;
    }
  } while (std::chrono::steady_clock::now() < deadline);
  g_spin_sink.fetch_add(x, std::memory_order_relaxed);
  return done;
}

}  // namespace amlp::train
