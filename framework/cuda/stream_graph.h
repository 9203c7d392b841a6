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
#pragma once
#include <cuda_runtime.h>

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
  void abandon() noexcept { graph_ = nullptr, exec_ = nullptr, capturing_ = nullptr; }
  bool ready() const { return exec_ != nullptr; }
  bool capturing() const { return capturing_ != nullptr; }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  cudaStream_t capturing_ = nullptr;  // the stream being captured
};

}  // namespace amlp::cuda
