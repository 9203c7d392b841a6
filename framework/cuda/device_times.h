// device_times.h — each op's start and end on the GPU while a trace is on:
// a pair of timing events around its launches, from a recycled pool, read
// once the GPU has passed them and written as spans on the device's own
// trace track ("device cuda:0"), beside the worker's launch track.
//
//   times.begin(seq, name, stream); ... launches ...; times.end(stream);   // worker
//   times.drain();   // any thread (the GPU's device current): finished ops become spans
//
// GPU times are placed on the trace's clock through a reference event the
// worker synchronizes once, when the first op is timed.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "framework/cuda/cuda_handles.h"

namespace amlp::cuda {

class DeviceTimes {
 public:
  explicit DeviceTimes(std::string device) : device_(std::move(device)) {}
  DeviceTimes(const DeviceTimes&) = delete;
  DeviceTimes& operator=(const DeviceTimes&) = delete;

  void begin(uint64_t seq, const char* name, cudaStream_t s);  // worker
  void end(cudaStream_t s);                                    // worker, after begin()
  // A span whose two events are recorded by someone else (a graph's mark
  // nodes, stream_graph.h): the events to point them at, in the trace's order.
  std::pair<cudaEvent_t, cudaEvent_t> external(uint64_t seq, const char* name, cudaStream_t s);  // worker
  void drain();                                                // any thread; never blocks on the GPU
  void clear() noexcept;                                       // destroys every event
  void abandon() noexcept;                                     // forgets them (the runtime is gone)

 private:
  struct Entry {
    uint64_t seq;
    const char* name;
    cudaEvent_t start, stop;
    bool ended;
  };
  cudaEvent_t take_locked();
  void ensure_ref_locked(cudaStream_t s);  // the trace's clock, set by the first span

  std::string device_;
  std::mutex mu_;
  int track_ = 0;             // registered with the first op timed
  cudaEvent_t ref_ = nullptr;  // GPU time 0 of the trace's clock ...
  uint64_t ref_us_ = 0;        // ... is this trace time
  std::deque<Entry> live_;
  std::vector<cudaEvent_t> free_;
  std::vector<EventPtr> owned_;
};

}  // namespace amlp::cuda
