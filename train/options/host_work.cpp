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

}  // namespace

void do_host_work(const HostWork& w) {
  if (w.ns <= 0) return;
  if (w.kind == HostWorkKind::Wait) {
    // An absolute deadline: a wake-up that comes early (a signal) sleeps again
    // for what is left; one that comes late is the cost of sleeping.
    timespec deadline{};
    ::clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += static_cast<time_t>(w.ns / 1000000000);
    deadline.tv_nsec += static_cast<long>(w.ns % 1000000000);
    if (deadline.tv_nsec >= 1000000000) deadline.tv_nsec -= 1000000000, ++deadline.tv_sec;
    while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nullptr) == EINTR) {
    }
    return;
  }
  // Compute: integer work on this core until the deadline (the clock read
  // every 256 rounds, ~1 µs).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(w.ns);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  do {
    for (int i = 0; i < 256; ++i) x ^= (x << 13), x ^= (x >> 7), x ^= (x << 17);  // xorshift
  } while (std::chrono::steady_clock::now() < deadline);
  g_spin_sink.fetch_add(x, std::memory_order_relaxed);
}

}  // namespace amlp::train
