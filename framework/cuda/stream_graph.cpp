// stream_graph.cpp — see stream_graph.h.
#include "framework/cuda/stream_graph.h"

#include "framework/cuda/cuda_check.h"

namespace amlp::cuda {

StreamGraph::~StreamGraph() { reset(); }

void StreamGraph::begin(cudaStream_t s) {
  AMLP_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  capturing_ = s;
  marks_used_ = 0;
  names_.clear();
  mark_nodes_.clear();
}

void StreamGraph::mark(cudaStream_t s, const char* name, bool start) {
  if (marks_used_ == placeholders_.size()) placeholders_.push_back(make_timing_event());
  AMLP_CUDA_CHECK(cudaEventRecordWithFlags(placeholders_[marks_used_++].get(), s, cudaEventRecordExternal));
  if (start) names_.push_back(name);
}

// Mark i's node is the event-record node that records placeholders_[i].
void StreamGraph::find_mark_nodes() {
  const size_t marks = marks_used_;
  if (marks == 0 || marks != 2 * names_.size()) {
    names_.clear();
    return;
  }
  size_t n = 0;
  AMLP_CUDA_CHECK(cudaGraphGetNodes(graph_, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  AMLP_CUDA_CHECK(cudaGraphGetNodes(graph_, nodes.data(), &n));
  mark_nodes_.assign(marks, nullptr);
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    AMLP_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeEventRecord) continue;
    cudaEvent_t e = nullptr;
    AMLP_CUDA_CHECK(cudaGraphEventRecordNodeGetEvent(node, &e));
    for (size_t i = 0; i < marks; ++i)
      if (placeholders_[i].get() == e) mark_nodes_[i] = node;
  }
  for (cudaGraphNode_t node : mark_nodes_)
    if (!node) {  // a mark the graph does not hold: time the launch as one span
      names_.clear();
      mark_nodes_.clear();
      return;
    }
}

void StreamGraph::set_marks(size_t i, cudaEvent_t start, cudaEvent_t stop) {
  AMLP_CUDA_CHECK(cudaGraphExecEventRecordNodeSetEvent(exec_, mark_nodes_.at(2 * i), start));
  AMLP_CUDA_CHECK(cudaGraphExecEventRecordNodeSetEvent(exec_, mark_nodes_.at(2 * i + 1), stop));
}

bool StreamGraph::end(cudaStream_t s) {
  cudaGraph_t g = nullptr;
  capturing_ = nullptr;
  AMLP_CUDA_CHECK(cudaStreamEndCapture(s, &g));  // also fails when a launch inside was invalid
  if (exec_ && marks_used_ > 0) {  // marks: their nodes must be the instantiated graph's own
    AMLP_CUDA_CHECK_LOG(cudaGraphExecDestroy(exec_));
    exec_ = nullptr;
  }
  if (exec_) {
    cudaGraphExecUpdateResultInfo info{};
    if (cudaGraphExecUpdate(exec_, g, &info) == cudaSuccess) {
      if (graph_) AMLP_CUDA_CHECK_LOG(cudaGraphDestroy(graph_));
      graph_ = g;
      return true;
    }
    (void)cudaGetLastError();  // another topology: instantiate anew
    AMLP_CUDA_CHECK_LOG(cudaGraphExecDestroy(exec_));
    exec_ = nullptr;
  }
  if (graph_) AMLP_CUDA_CHECK_LOG(cudaGraphDestroy(graph_));
  graph_ = g;
  AMLP_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
  find_mark_nodes();
  return false;
}

void StreamGraph::launch(cudaStream_t s) { AMLP_CUDA_CHECK(cudaGraphLaunch(exec_, s)); }

void StreamGraph::reset() noexcept {
  if (capturing_) {  // end the capture so the stream is usable again; its graph is discarded
    cudaGraph_t g = nullptr;
    (void)cudaStreamEndCapture(capturing_, &g);
    capturing_ = nullptr;
    (void)cudaGetLastError();
    if (g) AMLP_CUDA_CHECK_LOG(cudaGraphDestroy(g));
  }
  if (exec_) AMLP_CUDA_CHECK_LOG(cudaGraphExecDestroy(exec_));
  if (graph_) AMLP_CUDA_CHECK_LOG(cudaGraphDestroy(graph_));
  exec_ = nullptr;
  graph_ = nullptr;
  names_.clear();
  mark_nodes_.clear();
}

}  // namespace amlp::cuda
