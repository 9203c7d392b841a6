// elapsed.h — nanoseconds of steady_clock since a point, for the busy-time
// and backing-time counters (the queue's worker, step graphs, the CPU arena).
//
//   const auto t0 = std::chrono::steady_clock::now();
//   ...
//   busy_ns.fetch_add(ns_since(t0), std::memory_order_relaxed);
#pragma once
#include <chrono>
#include <cstdint>

namespace amlp {

inline uint64_t ns_since(std::chrono::steady_clock::time_point t0) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace amlp
