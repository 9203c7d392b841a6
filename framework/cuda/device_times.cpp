// device_times.cpp — see device_times.h.
#include "framework/cuda/device_times.h"

#include <cmath>

#include "framework/cuda/cuda_check.h"
#include "framework/trace.h"

namespace amlp::cuda {

cudaEvent_t DeviceTimes::take_locked() {
  if (!free_.empty()) {
    cudaEvent_t e = free_.back();
    free_.pop_back();
    return e;
  }
  owned_.push_back(make_timing_event());
  return owned_.back().get();
}

void DeviceTimes::ensure_ref_locked(cudaStream_t s) {
  if (ref_) return;
  // The trace's clock: the GPU passes ref_ at (about) ref_us_.
  track_ = trace::register_track("device " + device_);
  ref_ = take_locked();
  AMLP_CUDA_CHECK(cudaEventRecord(ref_, s));
  AMLP_CUDA_CHECK(cudaEventSynchronize(ref_));
  ref_us_ = trace::now_us();
}

std::pair<cudaEvent_t, cudaEvent_t> DeviceTimes::external(uint64_t seq, const char* name, cudaStream_t s) {
  std::lock_guard<std::mutex> lk(mu_);
  ensure_ref_locked(s);
  Entry e{seq, name, take_locked(), take_locked(), true};
  live_.push_back(e);
  return {e.start, e.stop};
}

void DeviceTimes::begin(uint64_t seq, const char* name, cudaStream_t s) {
  std::lock_guard<std::mutex> lk(mu_);
  ensure_ref_locked(s);
  Entry e{seq, name, take_locked(), nullptr, false};
  AMLP_CUDA_CHECK(cudaEventRecord(e.start, s));
  live_.push_back(e);
}

void DeviceTimes::end(cudaStream_t s) {
  std::lock_guard<std::mutex> lk(mu_);
  if (live_.empty() || live_.back().ended) return;
  Entry& e = live_.back();
  e.stop = take_locked();
  AMLP_CUDA_CHECK(cudaEventRecord(e.stop, s));
  e.ended = true;
}

void DeviceTimes::drain() {
  std::lock_guard<std::mutex> lk(mu_);
  while (!live_.empty() && live_.front().ended) {
    Entry& e = live_.front();
    const cudaError_t q = cudaEventQuery(e.stop);
    if (q == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return;
    }
    float from = 0, to = 0;
    if (q == cudaSuccess && cudaEventElapsedTime(&from, ref_, e.start) == cudaSuccess &&
        cudaEventElapsedTime(&to, ref_, e.stop) == cudaSuccess && trace::enabled()) {
      const auto us = [&](float ms) { return ref_us_ + static_cast<uint64_t>(std::llround(double(ms) * 1e3)); };
      try {
        trace::span(track_, e.name, us(from), us(to), e.seq);
      } catch (...) {  // a full trace buffer loses a span, never the op
      }
    }
    (void)cudaGetLastError();  // a failed query is the op's own error, reported by its waiter
    free_.push_back(e.start);
    free_.push_back(e.stop);
    live_.pop_front();
  }
}

void DeviceTimes::clear() noexcept {
  std::lock_guard<std::mutex> lk(mu_);
  live_.clear();
  free_.clear();
  owned_.clear();
  ref_ = nullptr;
}

void DeviceTimes::abandon() noexcept {
  std::lock_guard<std::mutex> lk(mu_);
  live_.clear();
  free_.clear();
  for (EventPtr& e : owned_) (void)e.release();
  owned_.clear();
  ref_ = nullptr;
}

}  // namespace amlp::cuda
