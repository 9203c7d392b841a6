// graph_hooks.cpp — the CUDA backend's step-graph hooks (stream_sync.h):
// the queue's held step recorded into one of two graphs (stream_graph.h),
// launched, replayed, dropped; with a trace on, each op of a launched graph
// timed on the device's track.
#include <vector>

#include "framework/cuda/cuda_backend.h"
#include "framework/trace.h"

namespace amlp::cuda {

bool CudaBackend::capture_begin(int slot) {
  if (!started_ || blocking_.load(std::memory_order_acquire)) return false;
  if (last_recorded_ < last_run_) {  // every op launched before has an event: waiters never touch the stream
    events_.record(last_run_, stream_.get());
    last_recorded_ = last_run_;
  }
  std::lock_guard<std::mutex> lk(capture_mu_);
  graphs_[slot].begin(stream_.get());
  capturing_ = true;
  return true;
}

void CudaBackend::capture_end(int slot, uint64_t last_seq) {
  {
    std::lock_guard<std::mutex> lk(capture_mu_);
    capturing_ = false;  // end() ends the capture whether it succeeds or not
  }
  graphs_[slot].end(stream_.get());
  launch_graph(slot, last_seq, "step graph (recorded)");
  events_.record(last_seq, stream_.get());
  last_run_ = last_recorded_ = last_seq;
}

// One cudaGraphLaunch; with a trace on, each of its ops' time on the GPU is a
// span on the device's track, like an eager op's (or, for a graph recorded
// without marks, the whole launch one span).
void CudaBackend::launch_graph(int slot, uint64_t last_seq, const char* what) {
  const bool timed = trace::enabled();
  const std::vector<const char*>& ops = graphs_[slot].marked_ops();
  if (timed && !ops.empty()) {  // each op of the step a span of its own (stream_graph.h's marks)
    const uint64_t first = last_seq + 1 - ops.size();  // a held step's ops are consecutive on its queue
    for (size_t i = 0; i < ops.size(); ++i) {
      const auto [start, stop] = times_.external(first + i, ops[i], stream_.get());
      graphs_[slot].set_marks(i, start, stop);
    }
    graphs_[slot].launch(stream_.get());
    times_.drain();
    return;
  }
  if (timed) times_.begin(last_seq, what, stream_.get());
  try {
    graphs_[slot].launch(stream_.get());
  } catch (...) {
    if (timed) times_.end(stream_.get());  // every begun span ends, or later ones never drain
    throw;
  }
  if (timed) {
    times_.end(stream_.get());
    times_.drain();
  }
}

bool CudaBackend::replay(int slot, uint64_t last_seq) {
  if (!started_ || !graphs_[slot].ready() || blocking_.load(std::memory_order_acquire)) return false;
  launch_graph(slot, last_seq, "step graph (replayed)");
  events_.record(last_seq, stream_.get());
  last_run_ = last_recorded_ = last_seq;
  return true;
}

void CudaBackend::drop_graph() noexcept {
  std::lock_guard<std::mutex> lk(capture_mu_);
  for (StreamGraph& g : graphs_) g.reset();
  capturing_ = false;
}

}  // namespace amlp::cuda
