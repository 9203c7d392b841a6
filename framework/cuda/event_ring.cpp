// event_ring.cpp — see event_ring.h.
#include "framework/cuda/event_ring.h"

#include <algorithm>
#include <string>

namespace amlp::cuda {

// Recycling runs only when no free event is left, and costs O(log n)
// queries for n live events: one stream passes its events in order, so once
// the event at index k passed every event before it did. The probes go to
// indices 0, 1, 3, 7, ... (a cudaEventQuery costs about as much as a launch:
// one per op would be half the worker's time).
void EventRing::recycle_passed_locked() {
  if (!free_.empty() || live_.empty()) return;
  size_t passed = 0;  // the first `passed` entries are known to have passed
  for (size_t probe = 1; probe <= live_.size(); probe *= 2) {
    const cudaError_t e = cudaEventQuery(live_[probe - 1].event);
    if (e == cudaErrorNotReady) {
      (void)cudaGetLastError();  // not an error: the GPU is behind
      break;
    }
    AMLP_CUDA_CHECK(e);  // an asynchronous fault of an earlier op
    passed = probe;
  }
  for (; passed > 0 && live_.front().waiters == 0; --passed) {
    passed_ = std::max(passed_, live_.front().seq);
    free_.push_back(live_.front().event);
    live_.pop_front();
  }
}

void EventRing::record(uint64_t seq, cudaStream_t stream) {
  std::lock_guard<std::mutex> lk(mu_);
  recycle_passed_locked();
  record_locked(seq, stream);
}

void EventRing::ensure(uint64_t seq, cudaStream_t stream) {
  std::lock_guard<std::mutex> lk(mu_);
  if (seq <= passed_ || (!live_.empty() && live_.back().seq >= seq)) return;
  record_locked(seq, stream);
}

void EventRing::record_locked(uint64_t seq, cudaStream_t stream) {
  cudaEvent_t ev;
  if (free_.empty()) {
    owned_.push_back(make_event());
    ev = owned_.back().get();
  } else {
    ev = free_.back();
    free_.pop_back();
  }
  const cudaError_t e = cudaEventRecord(ev, stream);
  if (e != cudaSuccess) {
    free_.push_back(ev);
    throw_failure(__FILE__, __LINE__, "cudaEventRecord(ev, stream)", cudaGetErrorString(e), static_cast<int>(e));
  }
  live_.push_back(Entry{seq, ev, 0});
}

void EventRing::wait(uint64_t seq, cudaStream_t stream) {
  std::unique_lock<std::mutex> lk(mu_);
  if (seq <= passed_) return;
  auto it = std::lower_bound(live_.begin(), live_.end(), seq,
                             [](const Entry& e, uint64_t s) { return e.seq < s; });
  if (it == live_.end()) {  // no event at or after seq (its record failed): wait for everything
    lk.unlock();
    if (stream) AMLP_CUDA_CHECK(cudaStreamSynchronize(stream));
    return;
  }
  Entry* entry = &*it;  // stays valid: entries with waiters are never popped
  entry->waiters++;
  const cudaEvent_t ev = entry->event;
  const uint64_t at = entry->seq;
  lk.unlock();
  const cudaError_t e = cudaEventSynchronize(ev);
  lk.lock();
  entry->waiters--;
  if (e == cudaSuccess) passed_ = std::max(passed_, at);
  lk.unlock();
  if (e != cudaSuccess) {
    const std::string what = "cudaEventSynchronize (waiting for op #" + std::to_string(seq) + ")";
    throw_failure(__FILE__, __LINE__, what.c_str(), cudaGetErrorString(e), static_cast<int>(e));
  }
}

bool EventRing::is_complete(uint64_t seq, cudaStream_t stream) {
  std::unique_lock<std::mutex> lk(mu_);
  if (seq <= passed_) return true;
  auto it = std::lower_bound(live_.begin(), live_.end(), seq, [](const Entry& e, uint64_t s) { return e.seq < s; });
  if (it == live_.end()) {
    // Op `seq` recorded no event (it did not run: an input had failed, it was
    // dropped, its allocation failed; or its record failed) and no later op
    // has one yet. What it launched, if anything, is on the stream: it is
    // complete once the stream is idle.
    lk.unlock();
    if (!stream) return true;
    const cudaError_t q = cudaStreamQuery(stream);
    if (q == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    return true;  // idle, or failed: a waiter reports the failure
  }
  const cudaError_t e = cudaEventQuery(it->event);
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  if (e != cudaSuccess) return true;  // failed: a waiter will report it
  passed_ = std::max(passed_, it->seq);
  return true;
}

bool EventRing::stream_wait(uint64_t seq, cudaStream_t consumer) {
  std::lock_guard<std::mutex> lk(mu_);
  if (seq <= passed_) return true;
  auto it = std::lower_bound(live_.begin(), live_.end(), seq, [](const Entry& e, uint64_t s) { return e.seq < s; });
  if (it == live_.end()) return false;
  // Under the lock: the event cannot be recycled and re-recorded meanwhile.
  AMLP_CUDA_CHECK(cudaStreamWaitEvent(consumer, it->event, 0));
  return true;
}

void EventRing::clear() noexcept {
  std::lock_guard<std::mutex> lk(mu_);
  live_.clear();
  free_.clear();
  owned_.clear();  // cudaEventDestroy, logged on failure
}

void EventRing::abandon() noexcept {
  std::lock_guard<std::mutex> lk(mu_);
  live_.clear();
  free_.clear();
  for (EventPtr& e : owned_) (void)e.release();
  owned_.clear();
}

}  // namespace amlp::cuda
