// elapsed.h — steady_clock in nanoseconds: a reading, and the time since a
// point, for the worker's clocks (worker_clock.h), a push's held time and
// the CPU arena's backing counters.
//
//   const auto t0 = std::chrono::steady_clock::now();
//   ...
//   busy_ns.fetch_add(ns_since(t0), std::memory_order_relaxed);
#pragma once
#include <chrono>
#include <cstdint>

namespace amlp {

// steady_clock's reading in nanoseconds (the worker's clocks, worker_clock.h).
inline uint64_t steady_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

inline uint64_t ns_since(std::chrono::steady_clock::time_point t0) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace amlp
