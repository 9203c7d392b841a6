// stream_graph.h — one CUDA graph recorded from a stream's launches, launched
// again with one call (the step_graph.h verdicts Capture, Update, Replay).
//
//   g.begin(stream);               // worker: the launches that follow are recorded, not run
//   ... the step's kernels ...
//   g.end(stream);                 // instantiates, or updates the instantiated graph in place
//   g.launch(stream);              // runs the step; again for each Replay verdict
//
// The capture is thread-local (cudaStreamCaptureModeThreadLocal): the
// frontend thread's cudaMalloc for the pool stays legal meanwhile. What a
// captured kernel reads and writes is fixed at capture: its buffers' addresses
// and its scalar arguments (step_graph.h compares both before a Replay).
// Every call throws amlp::Error on a CUDA failure; after one, reset() and run
// the step eagerly.
//
// While a trace is on, mark() brackets each op's launches inside the capture
// with an event-record node (cudaEventRecordExternal); before each launch,
// set_marks() points those nodes at fresh timing events, so the GPU time of
// every op of a replayed step becomes a span on the device's track, as an
// eager op's does (device_times.h).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "framework/cuda/cuda_handles.h"

namespace amlp::cuda {

class StreamGraph {
 public:
  StreamGraph() = default;
  ~StreamGraph();  // never throws
  StreamGraph(const StreamGraph&) = delete;
  StreamGraph& operator=(const StreamGraph&) = delete;

  void begin(cudaStream_t s);
  // Ends the capture. With an instantiated graph, tries cudaGraphExecUpdate
  // (same topology, other arguments); failing that, instantiates anew.
  // Returns true when the executable graph was updated in place.
  bool end(cudaStream_t s);
  void launch(cudaStream_t s);
  // Abandons a capture in progress (an op threw) and drops the graph.
  void reset() noexcept;
  // Forgets the graph without a CUDA call (the runtime is gone at exit).
  void abandon() noexcept {
    graph_ = nullptr, exec_ = nullptr, capturing_ = nullptr;
    for (EventPtr& e : placeholders_) (void)e.release();
    placeholders_.clear(), names_.clear(), mark_nodes_.clear();
  }
  bool ready() const { return exec_ != nullptr; }
  bool capturing() const { return capturing_ != nullptr; }

  // Inside a capture: an event-record node before (start) or after an op's
  // launches. `name` outlives the graph (op names are literals).
  void mark(cudaStream_t s, const char* name, bool start);
  // The captured ops' names, in order, when every one has its two mark nodes
  // in the instantiated graph (else none: the launch is timed as one span).
  const std::vector<const char*>& marked_ops() const { return names_; }
  // Before a launch: op i's marks record `start` and `stop`.
  void set_marks(size_t i, cudaEvent_t start, cudaEvent_t stop);

 private:
  void find_mark_nodes();  // after instantiation: each mark's node in graph_

  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  cudaStream_t capturing_ = nullptr;  // the stream being captured
  // Marks: a placeholder event per mark recorded (kept from capture to
  // capture), the ops' names and, once instantiated, their nodes.
  std::vector<EventPtr> placeholders_;
  size_t marks_used_ = 0;
  std::vector<const char*> names_;
  std::vector<cudaGraphNode_t> mark_nodes_;  // start, stop of op 0, then op 1, ...
};

}  // namespace amlp::cuda
