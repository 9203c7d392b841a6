// raw_launch.cu — raw_launch.h: add_scalar's kernel from a bare launch loop.
#include "bench/raw_launch.h"

#include <cuda_runtime.h>

#include <chrono>
#include <map>
#include <stdexcept>
#include <string>

namespace amlp::bench {

namespace {

// The same body and grid (one block of 256 for one element) as the backend's
// add_scalar_kernel (framework/cuda/elementwise.cu).
__global__ void add_scalar_kernel(const float* x, float add, float* y, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(blockDim.x) * gridDim.x)
    y[i] = __fadd_rn(x[i], add);
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

struct Buffers {
  float* x = nullptr;
  float* y = nullptr;
  cudaStream_t s = nullptr;
  Buffers() {
    check(cudaMalloc(&x, sizeof(float)), "cudaMalloc");
    check(cudaMalloc(&y, sizeof(float)), "cudaMalloc");
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  }
  ~Buffers() {
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
    cudaFree(x);
    cudaFree(y);
  }
};

}  // namespace

double raw_launch_seconds(int launches) {
  static Buffers b;  // made once: the loop times launches, not set-up
  check(cudaStreamSynchronize(b.s), "cudaStreamSynchronize");
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) {
    add_scalar_kernel<<<1, 256, 0, b.s>>>(b.x, 1.f, b.y, 1);
    check(cudaGetLastError(), "launch");  // the engine checks every launch too
  }
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  check(cudaStreamSynchronize(b.s), "cudaStreamSynchronize");
  return t;
}

double raw_capture_seconds(int kernels, int steps) {
  static Buffers b;
  static std::map<int, cudaGraphExec_t> execs;  // per step length, kept across calls as a recorded slot is
  cudaGraphExec_t& exec = execs[kernels];
  check(cudaStreamSynchronize(b.s), "cudaStreamSynchronize");
  const auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) {
    const float add = 1.f + float(s % 1024) * 0x1p-10f;
    check(cudaStreamBeginCapture(b.s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    for (int i = 0; i < kernels; ++i) {
      add_scalar_kernel<<<1, 256, 0, b.s>>>(i % 2 ? b.y : b.x, add, i % 2 ? b.x : b.y, 1);
      check(cudaGetLastError(), "launch");
    }
    cudaGraph_t g = nullptr;
    check(cudaStreamEndCapture(b.s, &g), "cudaStreamEndCapture");
    cudaGraphExecUpdateResultInfo info{};
    if (!exec || cudaGraphExecUpdate(exec, g, &info) != cudaSuccess) {
      (void)cudaGetLastError();  // a failed update (another shape) is instantiated anew
      if (exec) cudaGraphExecDestroy(exec);
      exec = nullptr;
      check(cudaGraphInstantiate(&exec, g, 0), "cudaGraphInstantiate");
    }
    check(cudaGraphDestroy(g), "cudaGraphDestroy");
    check(cudaGraphLaunch(exec, b.s), "cudaGraphLaunch");
  }
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  check(cudaStreamSynchronize(b.s), "cudaStreamSynchronize");
  return t;
}

}  // namespace amlp::bench
