// stream_graph.cpp — see stream_graph.h.
#include "framework/cuda/stream_graph.h"

#include "framework/cuda/cuda_check.h"

namespace amlp::cuda {

StreamGraph::~StreamGraph() { reset(); }

void StreamGraph::begin(cudaStream_t s) {
  AMLP_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  capturing_ = s;
}

bool StreamGraph::end(cudaStream_t s) {
  cudaGraph_t g = nullptr;
  capturing_ = nullptr;
  AMLP_CUDA_CHECK(cudaStreamEndCapture(s, &g));  // also fails when a launch inside was invalid
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
}

}  // namespace amlp::cuda
