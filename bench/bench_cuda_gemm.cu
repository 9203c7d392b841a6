// bench_cuda_gemm.cu — the GEMM floor of one d2l MLP training step on a GPU:
// the eight GEMMs the framework issues for Dense(2048, relu) -> Dense(512,
// relu) -> Dense(1) at 512 features and batch 64, 256 or 1024, through the very
// row-major cuBLAS call the backend makes (framework/cuda/sgemm.h), on one
// stream, timed alone with CUDA events. A training step can approach this
// time but not beat it; train_mlp's steps/s is quoted against it.
//
//   BM_CudaMlpGemmFloor/tf32:0/batch:B   all eight, per step (FP32, the default)
//   BM_CudaMlpGemmFloor/tf32:1/batch:B   the same with TF32 tensor cores
//   BM_CudaMlpGemm/gemm:i/beta:b         one GEMM at a time at batch 1024 (the label names
//                                        it), accumulating onto C (b = 1) or not (b = 0)
//   BM_SgdUpdate                         the step's SGD update of its six parameters (the
//                                        backend's launcher, cuda/kernels.h), one launch
//   BM_BiasRelu                          the forward's bias and ReLU pass over layer 1's
//                                        output at batch 1024 (1024 x 2048, in place)
//   BM_ReluBackwardSumRows               the backward's ReLU mask and bias gradient over the
//                                        same shape (dz = dy * (y > 0) in place, db)
//   BM_DeviceCopy/of:P                   cudaMemcpyAsync device to device, reading and writing
//                                        as many bytes as pass P does (0 the update, 1 the
//                                        bias and ReLU, 2 the ReLU's backward)
// Each reports GBps: bytes read and written per second; a pass's share of
// its copy's is how near it runs to what the memory gives.
// The GPU kit runs the floor and the passes: --benchmark_filter='Floor|Sgd|Relu|Copy'.
//
// Each timed iteration runs kRepeat steps back to back between two events,
// after a warm-up, so the launch cost of the small GEMMs is hidden as it is
// in a run-ahead training loop. Without a GPU every benchmark reports
// "no CUDA GPU visible" and the program exits 0.
#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "framework/cuda/cuda_backend.h"
#include "framework/cuda/cuda_check.h"
#include "framework/cuda/cuda_handles.h"
#include "framework/cuda/kernels.h"
#include "cuda_bench.h"
#include "framework/cuda/sgemm.h"

namespace amlp::cuda {
// reduce.cu's launcher of the ReLU backward and bias gradient (the op's
// kernel, reached here without a Backend): dz = dy * (y > 0) and db(c) =
// sum_r dz(r,c) in one launch. `partials` holds kColsumPartials doubles and
// then kColsumTickets zeroed tickets (CudaBackend::colsum()); the tickets are
// zero again when it has run. Declared here, the one caller outside reduce.cu.
void launch_relu_backward_sum_rows(const float* y, const float* dy, float* dz, float* db, int rows, int cols,
                                   int sms, double* partials, cudaStream_t s);
}  // namespace amlp::cuda

namespace {

using namespace amlp::cuda;

// One cuBLAS call as the backend issues it (cuda/linalg.cpp): op(A)(M,K) · op(B)(K,N) → C(M,N), row-major.
struct Gemm {
  const char* name;
  bool trans_a, trans_b;
  int M, N, K, lda, ldb;
  float beta;  // linear() pre-fills y with the bias: beta = 1
  double flops() const { return 2.0 * M * N * K; }
};

constexpr int kMaxBatch = 1024, kIn = 512, kH1 = 2048, kH2 = 512, kOut = 1;
constexpr int kGemms = 8;

// Forward, linear():  y = x·Wᵀ + y           x (B,in), W (out,in)
// Backward, linear's: dX = G·W (B,in);  dW = Gᵀ·X (out,in)   G (B,out)
// (The input X needs no gradient, so layer 1 has no dX.) Leading dimensions
// do not depend on the batch: one set of buffers (kMaxBatch rows) serves every batch.
std::vector<Gemm> step_gemms(int B) {
  return {
      {"fwd1 X.W1t", false, true, B, kH1, kIn, kIn, kIn, 1.f},
      {"fwd2 H1.W2t", false, true, B, kH2, kH1, kH1, kH1, 1.f},
      {"fwd3 H2.W3t", false, true, B, kOut, kH2, kH2, kH2, 1.f},
      {"dH2 G3.W3", false, false, B, kH2, kOut, kOut, kH2, 0.f},
      {"dW3 G3t.H2", true, false, kOut, kH2, B, kOut, kH2, 0.f},
      {"dH1 G2.W2", false, false, B, kH1, kH2, kH2, kH1, 0.f},
      {"dW2 G2t.H1", true, false, kH2, kH1, B, kH2, kH1, 0.f},
      {"dW1 G1t.X", true, false, kH1, kIn, B, kH1, kIn, 0.f},
  };
}
const std::vector<Gemm> kStep = step_gemms(kMaxBatch);  // the buffers' shapes
constexpr int kRepeat = 10;  // steps per timed iteration
constexpr int kWarmUp = 20;

__global__ void init_kernel(float* p, size_t n, unsigned salt) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(blockDim.x) * gridDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ salt;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = (h & 0xffffff) / float(0x800000) - 1.f;  // [-1, 1)
  }
}

// Everything the benchmarks share: made once, on first use, for the process.
struct Floor {
  std::string no_gpu;  // why not, when there is no GPU
  StreamPtr stream;
  CublasPtr blas;
  DeviceBuffer workspace;
  EventPtr start, stop;
  std::vector<DeviceBuffer> a, b, c;

  Floor() {
    no_gpu = amlp::bench::use_first_gpu();
    if (!no_gpu.empty()) return;
    stream = make_stream();
    blas = make_cublas();
    AMLP_CUDA_CHECK(cublasSetStream(blas.get(), stream.get()));
    const size_t ws = size_t(32) << 20;  // as the backend: CudaBackend::kBlasWorkspaceBytes
    workspace = device_alloc(ws);
    AMLP_CUDA_CHECK(cublasSetWorkspace(blas.get(), workspace.get(), ws));
    cudaEvent_t e0, e1;
    AMLP_CUDA_CHECK(cudaEventCreate(&e0));
    start.reset(e0);
    AMLP_CUDA_CHECK(cudaEventCreate(&e1));
    stop.reset(e1);
    unsigned salt = 1;
    auto filled = [&](size_t n) {
      DeviceBuffer p = device_alloc(n * sizeof(float));
      init_kernel<<<256, 256, 0, stream.get()>>>(static_cast<float*>(p.get()), n, salt++);
      AMLP_CUDA_CHECK_LAUNCH();
      return p;
    };
    for (const Gemm& g : kStep) {
      const size_t a_rows = g.trans_a ? g.K : g.M, b_rows = g.trans_b ? g.N : g.K;
      a.push_back(filled(a_rows * g.lda));
      b.push_back(filled(b_rows * g.ldb));
      c.push_back(filled(size_t(g.M) * g.N));
    }
    AMLP_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  }

  void set_tf32(bool on) { AMLP_CUDA_CHECK(cublasSetMathMode(blas.get(), math_mode(on))); }

  void run(int i, const Gemm& g) { run(i, g, g.beta); }
  void run(int i, const Gemm& g, float beta) {
    const float one = 1.f;
    AMLP_CUDA_CHECK(sgemm_row_major(blas.get(), g.trans_a, g.trans_b, g.M, g.N, g.K, &one,
                                    static_cast<const float*>(a[i].get()), g.lda,
                                    static_cast<const float*>(b[i].get()), g.ldb, &beta,
                                    static_cast<float*>(c[i].get()), g.N));
  }

  // Runs `body` kRepeat times between the two events; seconds per repetition.
  template <class Body>
  double timed(Body body) {
    return amlp::bench::seconds_per_call(stream.get(), start.get(), stop.get(), kRepeat, body);
  }
};

Floor& floor_state() {
  static Floor* f = new Floor();  // leaked: the CUDA runtime may be gone before static destructors
  return *f;
}

// Without a GPU the benchmark reports why and is skipped (true).
bool skipped_without_gpu(benchmark::State& state, const Floor& f) {
  if (f.no_gpu.empty()) return false;
  state.SkipWithError(f.no_gpu.c_str());
  return true;
}

// Times `body` after a warm-up, each iteration kRepeat calls between two
// events; the seconds per call (0 when nothing was timed), with
// us_per_call set. The benchmarks add their rate from it.
template <class Body>
double measure(benchmark::State& state, Floor& f, Body body) {
  for (int i = 0; i < kWarmUp; ++i) body();
  AMLP_CUDA_CHECK(cudaStreamSynchronize(f.stream.get()));
  double total = 0;
  for (auto _ : state) {
    const double s = f.timed(body);
    state.SetIterationTime(s);
    total += s;
  }
  if (total <= 0) return 0;
  const double per = total / static_cast<double>(state.iterations());
  state.counters["us_per_call"] = per * 1e6;
  return per;
}

void BM_CudaMlpGemmFloor(benchmark::State& state) {
  Floor& f = floor_state();
  if (skipped_without_gpu(state, f)) return;
  const bool tf32 = state.range(0) != 0;
  const int batch = static_cast<int>(state.range(1));
  const std::vector<Gemm> step = step_gemms(batch);
  f.set_tf32(tf32);
  double flops = 0;
  for (const Gemm& g : step) flops += g.flops();
  if (const double per = measure(state, f, [&] {
        for (int i = 0; i < kGemms; ++i) f.run(i, step[i]);
      }))
    state.counters["TFLOPS"] = flops / per / 1e12;
  f.set_tf32(false);
  state.SetLabel(std::string("8 GEMMs of a d2l step at batch ") + std::to_string(batch) + (tf32 ? ", TF32" : ", FP32"));
}
BENCHMARK(BM_CudaMlpGemmFloor)
    ->ArgNames({"tf32", "batch"})
    ->ArgsProduct({{0, 1}, {64, 256, kMaxBatch}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void BM_CudaMlpGemm(benchmark::State& state) {
  Floor& f = floor_state();
  if (skipped_without_gpu(state, f)) return;
  const int i = static_cast<int>(state.range(0));
  const float beta = static_cast<float>(state.range(1));
  f.set_tf32(false);
  if (const double per = measure(state, f, [&] { f.run(i, kStep[i], beta); }))
    state.counters["TFLOPS"] = kStep[i].flops() / per / 1e12;
  state.SetLabel(kStep[i].name);
}
BENCHMARK(BM_CudaMlpGemm)
    ->ArgNames({"gemm", "beta"})
    ->ArgsProduct({benchmark::CreateDenseRange(0, kGemms - 1, 1), {0, 1}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// The d2l MLP's parameters, each in a buffer of its own as the model holds
// them: W1 (2048,512), b1, W2 (512,2048), b2, W3 (1,512), b3.
struct Params {
  std::vector<DeviceBuffer> w, g;
  std::vector<amlp::SgdParam> table;
  size_t floats = 0;
  DeviceBuffer copy_src, copy_dst, bias, db, colsum;
  Params(Floor& f) {
    for (size_t n : {size_t(kH1) * kIn, size_t(kH1), size_t(kH2) * kH1, size_t(kH2), size_t(kOut) * kH2, size_t(kOut)}) {
      w.push_back(device_alloc(n * sizeof(float)));
      g.push_back(device_alloc(n * sizeof(float)));
      for (DeviceBuffer* b : {&w.back(), &g.back()}) {
        init_kernel<<<256, 256, 0, f.stream.get()>>>(static_cast<float*>(b->get()), n, unsigned(n));
        AMLP_CUDA_CHECK_LAUNCH();
      }
      table.push_back({static_cast<float*>(w.back().get()), static_cast<const float*>(g.back().get()), nullptr, n});
      floats += n;
    }
    const size_t most = std::max(update_bytes(), relu_backward_bytes()) / 2;
    copy_src = device_alloc(most);
    copy_dst = device_alloc(most);
    AMLP_CUDA_CHECK(cudaMemsetAsync(copy_src.get(), 0, most, f.stream.get()));
    bias = device_alloc(kH1 * sizeof(float));
    init_kernel<<<8, 256, 0, f.stream.get()>>>(static_cast<float*>(bias.get()), kH1, 7u);
    AMLP_CUDA_CHECK_LAUNCH();
    db = device_alloc(kH1 * sizeof(float));
    const size_t colsum_bytes = CudaBackend::kColsumPartials * sizeof(double) + CudaBackend::kColsumTickets * sizeof(unsigned);
    colsum = device_alloc(colsum_bytes);  // as the backend's: the tickets start at zero
    AMLP_CUDA_CHECK(cudaMemsetAsync(colsum.get(), 0, colsum_bytes, f.stream.get()));
    AMLP_CUDA_CHECK(cudaStreamSynchronize(f.stream.get()));
  }
  static constexpr size_t kLayer1 = size_t(kMaxBatch) * kH1;  // floats of layer 1's output
  size_t update_bytes() const { return 3 * floats * sizeof(float); }  // w and g read, w written
  static size_t bias_relu_bytes() { return 2 * kLayer1 * sizeof(float); }       // y read and written
  static size_t relu_backward_bytes() { return 3 * kLayer1 * sizeof(float); }   // y, dy read; dz written
  size_t pass_bytes(int of) const { return of == 0 ? update_bytes() : of == 1 ? bias_relu_bytes() : relu_backward_bytes(); }
};

Params& params_state(Floor& f) {
  static Params* p = new Params(f);
  return *p;
}

// measure(), with the bytes read and written per second (GBps).
template <class Body>
void measure_bytes(benchmark::State& state, Floor& f, Body body, size_t bytes) {
  if (const double per = measure(state, f, body)) state.counters["GBps"] = double(bytes) / per / 1e9;
}

void BM_SgdUpdate(benchmark::State& state) {
  Floor& f = floor_state();
  if (skipped_without_gpu(state, f)) return;
  Params& p = params_state(f);
  measure_bytes(state, f, [&] {
    launch_sgd_multi(p.table.data(), static_cast<int>(p.table.size()), 1e-6f, 0.f, 0.f, 1.f, f.stream.get());
  }, p.update_bytes());
  state.SetLabel("the d2l step's 6 parameters, " + std::to_string(p.floats) + " floats");
}
BENCHMARK(BM_SgdUpdate)->UseManualTime()->Unit(benchmark::kMicrosecond);

// Layer 1's output (the floor's fwd1 result) and its input gradient (dH1's), as the step holds them.
void BM_BiasRelu(benchmark::State& state) {
  Floor& f = floor_state();
  if (skipped_without_gpu(state, f)) return;
  Params& p = params_state(f);
  const int sms = amlp::bench::multiprocessors();
  measure_bytes(state, f, [&] {
    launch_bias_relu(static_cast<float*>(f.c[0].get()), static_cast<const float*>(p.bias.get()), kMaxBatch, kH1, sms,
                     f.stream.get());
  }, p.bias_relu_bytes());
  state.SetLabel("y = max(y + b, 0), 1024 x 2048");
}
BENCHMARK(BM_BiasRelu)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_ReluBackwardSumRows(benchmark::State& state) {
  Floor& f = floor_state();
  if (skipped_without_gpu(state, f)) return;
  Params& p = params_state(f);
  const int sms = amlp::bench::multiprocessors();
  auto* dz = static_cast<float*>(f.c[5].get());
  measure_bytes(state, f, [&] {
    launch_relu_backward_sum_rows(static_cast<const float*>(f.c[0].get()), dz, dz, static_cast<float*>(p.db.get()),
                                  kMaxBatch, kH1, sms, static_cast<double*>(p.colsum.get()), f.stream.get());
  }, p.relu_backward_bytes());
  state.SetLabel("dz = dy * (y > 0) in place, db = column sums, 1024 x 2048");
}
BENCHMARK(BM_ReluBackwardSumRows)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_DeviceCopy(benchmark::State& state) {
  Floor& f = floor_state();
  if (skipped_without_gpu(state, f)) return;
  Params& p = params_state(f);
  const int of = static_cast<int>(state.range(0));
  const size_t half = p.pass_bytes(of) / 2;  // read once, written once
  measure_bytes(state, f, [&] {
    AMLP_CUDA_CHECK(cudaMemcpyAsync(p.copy_dst.get(), p.copy_src.get(), half, cudaMemcpyDeviceToDevice, f.stream.get()));
  }, 2 * half);
  static const char* const kOf[] = {"BM_SgdUpdate", "BM_BiasRelu", "BM_ReluBackwardSumRows"};
  state.SetLabel(std::string("as many bytes read and written as ") + kOf[of]);
}
BENCHMARK(BM_DeviceCopy)->ArgName("of")->DenseRange(0, 2)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
