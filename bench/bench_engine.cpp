// bench_engine.cpp — what the engine costs: pushing an op, waking the worker,
// waiting, and one d2l MLP training step against the floor of its own GEMMs.
//
// Run (medians of 5, interleaved so load drift hits every benchmark alike):
//   build/bin/bench_engine --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
//       --benchmark_enable_random_interleaving=true
//   build/bin/bench_engine --benchmark_filter='Mlp' --benchmark_repetitions=5 ...   # one group
//   python3 tools/bench_ratio.py build/bin/bench_engine      # the same, plus the two target checks
// Targets: BM_PushNoop median ≤ 1 µs; BM_MlpStep ≤ 1.15 × BM_MlpGemmFloor.
// Keep OPENBLAS_CORETYPE as the environment sets it: both MLP benchmarks use
// the same OpenBLAS kernels, so the ratio compares like with like.
//
//   BM_PushNoop             add_scalar on a (1,) tensor pushed onto a paused cpu:0 queue: the
//                           frontend's own cost per op (check, allocate, record, push). The
//                           backlog is drained outside the timed region every kDrainEvery ops.
//   BM_PushNoopWorkerRunning the same with the worker running: push cost while the worker
//                           contends for the queue's lock and cache lines (for comparison).
//   BM_PushToExecute        push → the kernel starts running, worker idle (manual time).
//   BM_WaitFinished         wait_to_read() on a tensor whose op has finished.
//   BM_WaitPending          push add_scalar on a (1,) tensor, then wait_to_read() it: the round trip.
//   BM_MlpStep              Dense(2048,relu) → Dense(512,relu) → Dense(1), input 512, batch 1024:
//                           forward, L2Loss, backward, SGD(0.005).step(1024), waitall().
//   BM_MlpGemmFloor         exactly that step's eight GEMMs through cblas_sgemm, same shapes and
//                           transposes, on preallocated, pre-touched buffers.
//   BM_MlpStepPaired        the two alternately in one loop; counter `ratio` is the median of
//                           step/floor per pair: on a shared machine, load drift between the two
//                           benchmarks above can move their ratio by ±30%, the paired one by a few %.
//   BM_TrainStepPaired      the driver's whole batch (data drawn, step, zero_grad, item()) paired
//                           with the same floor: the end-to-end ratio against the GEMM floor.
//
// Checkpoints (target: linear in the tensors, 100,000 one-unit layers within 2x ten times
// 10,000 of them; 10,000 layers of 10 beside them for the bytes):
//   BM_SaveParameters/L/W   save_parameters of an MLP of L ReLU layers of width W (input W,
//                           batch 1, one output) to a file: every value read back, the file
//                           written whole.
//   BM_LoadParameters/L/W   load_parameters of that file into the same network, then waitall().
//
// Random numbers (targets: ≥ 1 G numbers/s on 2 cores, a 1024×512 batch in ≤ 0.5 ms), items/s:
//   BM_RandomNormal, BM_RandomUniform   randn / rand_uniform (1024, 512) on cpu:0, then waitall():
//                           the public ops, vectorised Philox on both cores. CPU column: the
//                           whole process's CPU time (worker + helper), which on a loaded
//                           machine says more than the wall time does.
//   BM_RandomNormalOneCore, ...Uniform  philox::fill_* on this thread alone (the best ISA).
//   BM_RandomNormalScalar, ...Uniform   the same with the scalar fallback.
//   BM_CuRandHostNormal, ...Uniform     the old path: cuRAND's host generator, set to (seed,
//                           offset) and drawing the batch (needs cuRAND; the same numbers).
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "framework/asyncmlp.h"
#include "framework/core/context.h"  // the engine benchmark times the queue itself
#include "framework/cpu/philox.h"    // and the random-number kernels on their own
#include "models/mlp.h"

#if ASYNCMLP_HAVE_CURAND
#include <curand.h>
#endif

namespace {

using amlp::Device;
using amlp::Tensor;
using Clock = std::chrono::steady_clock;

constexpr int64_t kDrainEvery = 4096;
constexpr int64_t kBatch = 1024, kIn = 512, kH1 = 2048, kH2 = 512;

const Device kCpu = Device::cpu(0);

void push_noop(benchmark::State& state, bool paused) {
  if (amlp::blocking()) {  // a push onto a paused queue would wait forever
    state.SkipWithError("synchronous mode (ASYNCMLP_BLOCKING) is on: pushes wait, nothing to measure");
    return;
  }
  Tensor x = amlp::ones({1}, kCpu);
  amlp::waitall();
  std::optional<amlp::QueuePause> pause;
  if (paused) pause.emplace(kCpu);
  int64_t n = 0;
  for (auto _ : state) {
    Tensor y = amlp::add_scalar(x, 1.f);
    benchmark::DoNotOptimize(y);
    if (++n % kDrainEvery == 0) {
      state.PauseTiming();
      y = Tensor();
      pause.reset();
      amlp::waitall();
      if (paused) pause.emplace(kCpu);
      state.ResumeTiming();
    }
  }
  pause.reset();
  amlp::waitall();
}

void BM_PushNoop(benchmark::State& state) { push_noop(state, /*paused=*/true); }
void BM_PushNoopWorkerRunning(benchmark::State& state) { push_noop(state, /*paused=*/false); }

void BM_PushToExecute(benchmark::State& state) {
  amlp::Queue& q = amlp::context(kCpu).queue;
  amlp::waitall();
  auto ns = [](Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  };
  std::atomic<int64_t> started_ns{0};
  for (auto _ : state) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));  // let the worker fall asleep
    const auto t0 = Clock::now();
    uint64_t seq = q.push("probe", [&] { started_ns = ns(Clock::now()); });  // runs on the worker
    q.wait_for(seq);
    state.SetIterationTime(double(started_ns.load() - ns(t0)) * 1e-9);
  }
}

void BM_WaitFinished(benchmark::State& state) {
  Tensor y = amlp::add_scalar(amlp::ones({1}, kCpu), 1.f);
  amlp::waitall();
  for (auto _ : state) y.wait_to_read();
}

void BM_WaitPending(benchmark::State& state) {
  Tensor x = amlp::ones({1}, kCpu);
  amlp::waitall();
  for (auto _ : state) {
    Tensor y = amlp::add_scalar(x, 1.f);
    y.wait_to_read();
  }
}

// One d2l MLP training step on cpu:0, synchronized at its end. Data made once.
struct MlpStep {
  std::unique_ptr<amlp::Sequential> net = amlp::models::make_mlp(amlp::models::parse_layer_spec("2048,512"));
  Tensor X, y;
  amlp::L2Loss loss;
  std::unique_ptr<amlp::SGD> sgd;

  MlpStep() {
    amlp::manual_seed(42);
    X = amlp::randn({kBatch, kIn}, kCpu);
    y = amlp::ones({kBatch}, kCpu);
    net->forward(X);  // deferred initialisation
    sgd = std::make_unique<amlp::SGD>(net->parameters(), 0.005f);
    for (int i = 0; i < 2; ++i) run();  // warm-up: the pool caches every buffer
  }
  void run() {
    Tensor l = loss(net->forward(X), y);
    l.backward();
    sgd->step(kBatch);
    amlp::waitall();
  }
};

// C(M,N) = op(A)·op(B) + beta·C, row-major, as the CPU backend calls it.
void gemm(bool ta, bool tb, int M, int N, int K, const float* A, const float* B, float beta, float* C) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, 1.f, A,
              ta ? M : K, B, tb ? K : N, beta, C, N);
}

// The same step's eight GEMMs on preallocated, pre-touched buffers.
struct MlpGemmFloor {
  static std::vector<float> buf(int64_t rows, int64_t cols) { return std::vector<float>(size_t(rows * cols), 0.01f); }
  std::vector<float> X = buf(kBatch, kIn);                                         // X: (B, 512)
  std::vector<float> W1 = buf(kH1, kIn), W2 = buf(kH2, kH1), W3 = buf(1, kH2);     // W: (out, in)
  std::vector<float> Z1 = buf(kBatch, kH1), Z2 = buf(kBatch, kH2), Z3 = buf(kBatch, 1);  // also H = relu(Z)
  std::vector<float> G = buf(kBatch, 1);                                           // dL/dZ3: (B, 1)
  std::vector<float> dW3 = buf(1, kH2), dH2 = buf(kBatch, kH2), dW2 = buf(kH2, kH1), dH1 = buf(kBatch, kH1),
                     dW1 = buf(kH1, kIn);

  void run() {
    const int B = int(kBatch), I = int(kIn), H1 = int(kH1), H2 = int(kH2);
    // forward: Z = H·Wᵀ (+ the bias already in Z: beta = 1, as linear() does)
    gemm(false, true, B, H1, I, X.data(), W1.data(), 1.f, Z1.data());     // (B,512)·(2048,512)ᵀ → (B,2048)
    gemm(false, true, B, H2, H1, Z1.data(), W2.data(), 1.f, Z2.data());   // (B,2048)·(512,2048)ᵀ → (B,512)
    gemm(false, true, B, 1, H2, Z2.data(), W3.data(), 1.f, Z3.data());    // (B,512)·(1,512)ᵀ → (B,1)
    // backward (g = dZ3; dZ2 = dH2 masked, dZ1 = dH1 masked: the same buffers here)
    gemm(true, false, 1, H2, B, G.data(), Z2.data(), 0.f, dW3.data());      // dW3 = gᵀ·H2    (1,512)
    gemm(false, false, B, H2, 1, G.data(), W3.data(), 0.f, dH2.data());     // dH2 = g·W3     (B,512)
    gemm(true, false, H2, H1, B, dH2.data(), Z1.data(), 0.f, dW2.data());   // dW2 = dZ2ᵀ·H1  (512,2048)
    gemm(false, false, B, H1, H2, dH2.data(), W2.data(), 0.f, dH1.data());  // dH1 = dZ2·W2   (B,2048)
    gemm(true, false, H1, I, B, dH1.data(), X.data(), 0.f, dW1.data());     // dW1 = dZ1ᵀ·X   (2048,512)
    benchmark::ClobberMemory();
  }
};

// An MLP of state.range(0) layers of width state.range(1), initialised, and its file.
struct CheckpointModel {
  std::unique_ptr<amlp::Sequential> net;
  std::string path;
  explicit CheckpointModel(const benchmark::State& state) {
    const int64_t layers = state.range(0), width = state.range(1);
    amlp::manual_seed(42);
    net = amlp::models::make_mlp({std::vector<int64_t>(static_cast<size_t>(layers), width)}, 1);
    net->forward(amlp::randn({1, width}, kCpu));  // deferred initialisation
    amlp::waitall();
    path = "/tmp/bench_engine_" + std::to_string(::getpid()) + ".safetensors";
  }
  ~CheckpointModel() { std::remove(path.c_str()); }
};

void BM_SaveParameters(benchmark::State& state) {
  CheckpointModel m(state);
  for (auto _ : state) amlp::save_parameters(m.path, *m.net);
  state.counters["tensors"] = static_cast<double>(m.net->parameters().size());
}

void BM_LoadParameters(benchmark::State& state) {
  CheckpointModel m(state);
  amlp::save_parameters(m.path, *m.net);
  for (auto _ : state) {
    amlp::load_parameters(m.path, *m.net);
    amlp::waitall();
  }
  state.counters["tensors"] = static_cast<double>(m.net->parameters().size());
}

void BM_MlpStep(benchmark::State& state) {
  MlpStep step;
  for (auto _ : state) step.run();
}

void BM_MlpGemmFloor(benchmark::State& state) {
  MlpGemmFloor floor;
  for (auto _ : state) floor.run();
}

// Step and floor alternately, so load from other processes hits both alike:
// counters step_ms, floor_ms (means) and ratio (median of step/floor per pair).
template <class Step>
void run_paired(benchmark::State& state, Step& step) {
  MlpGemmFloor floor;
  floor.run();
  std::vector<double> ratios;
  double step_s = 0, floor_s = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    step.run();
    const double a = std::chrono::duration<double>(Clock::now() - t0).count();
    t0 = Clock::now();
    floor.run();
    const double b = std::chrono::duration<double>(Clock::now() - t0).count();
    step_s += a;
    floor_s += b;
    ratios.push_back(a / b);
    state.SetIterationTime(a + b);
  }
  std::sort(ratios.begin(), ratios.end());
  const double n = double(ratios.size());
  state.counters["step_ms"] = step_s / n * 1e3;
  state.counters["floor_ms"] = floor_s / n * 1e3;
  state.counters["ratio"] = ratios.size() % 2 ? ratios[ratios.size() / 2]
                                              : 0.5 * (ratios[ratios.size() / 2 - 1] + ratios[ratios.size() / 2]);
}

void BM_MlpStepPaired(benchmark::State& state) {
  MlpStep step;
  run_paired(state, step);
}

// The driver's whole batch (train/runs/experiment.cpp, --sync batch): the data
// drawn by queued ops, forward, loss, backward, SGD, zero_grad, then the
// loss read with item(); paired with the GEMM floor like BM_MlpStepPaired.
struct TrainStep : MlpStep {
  void run() {
    Tensor X = amlp::randn({kBatch, kIn}, kCpu), ones = amlp::ones({kBatch}, kCpu);
    Tensor l = loss(net->forward(X), ones);
    l.backward();
    sgd->step(kBatch);
    sgd->zero_grad();
    benchmark::DoNotOptimize(amlp::mean(l).item());
  }
};

void BM_TrainStepPaired(benchmark::State& state) {
  TrainStep step;
  for (int i = 0; i < 2; ++i) step.run();  // warm-up with its own buffers (the data)
  run_paired(state, step);
}

// --- random numbers: one (1024, 512) batch per iteration ---------------------------

constexpr int64_t kRandomCount = kBatch * kIn;

template <bool kNormal>
void random_op(benchmark::State& state) {
  amlp::manual_seed(42);
  for (auto _ : state) {
    Tensor y = kNormal ? amlp::randn({kBatch, kIn}, kCpu) : amlp::rand_uniform({kBatch, kIn}, kCpu);
    amlp::waitall();
  }
  state.SetItemsProcessed(state.iterations() * kRandomCount);
}
void BM_RandomNormal(benchmark::State& state) { random_op<true>(state); }
void BM_RandomUniform(benchmark::State& state) { random_op<false>(state); }

template <bool kNormal>
void random_fill(benchmark::State& state, amlp::philox::Isa isa) {
  std::vector<float> y(kRandomCount);
  uint64_t offset = 0;
  for (auto _ : state) {
    if (kNormal) amlp::philox::fill_normal(y.data(), 42, offset, offset + kRandomCount, 0.f, 1.f, isa);
    else amlp::philox::fill_uniform(y.data(), 42, offset, offset + kRandomCount, 0.f, 1.f, isa);
    offset += kRandomCount;
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kRandomCount);
}
void BM_RandomNormalOneCore(benchmark::State& s) { random_fill<true>(s, amlp::philox::best_isa()); }
void BM_RandomUniformOneCore(benchmark::State& s) { random_fill<false>(s, amlp::philox::best_isa()); }
void BM_RandomNormalScalar(benchmark::State& s) { random_fill<true>(s, amlp::philox::Isa::Scalar); }
void BM_RandomUniformScalar(benchmark::State& s) { random_fill<false>(s, amlp::philox::Isa::Scalar); }

#if ASYNCMLP_HAVE_CURAND
template <bool kNormal>
void curand_host(benchmark::State& state) {
  curandGenerator_t gen = nullptr;
  if (curandCreateGeneratorHost(&gen, CURAND_RNG_PSEUDO_PHILOX4_32_10) != CURAND_STATUS_SUCCESS) {
    state.SkipWithError("curandCreateGeneratorHost failed");
    return;
  }
  std::vector<float> y(kRandomCount);
  uint64_t offset = 0;
  bool ok = true;
  for (auto _ : state) {  // as the CPU backend drew before: seed, offset, generate
    ok &= curandSetPseudoRandomGeneratorSeed(gen, 42) == CURAND_STATUS_SUCCESS;
    ok &= curandSetGeneratorOffset(gen, offset) == CURAND_STATUS_SUCCESS;
    ok &= (kNormal ? curandGenerateNormal(gen, y.data(), y.size(), 0.f, 1.f)
                   : curandGenerateUniform(gen, y.data(), y.size())) == CURAND_STATUS_SUCCESS;
    offset += kRandomCount;
    benchmark::ClobberMemory();
  }
  curandDestroyGenerator(gen);
  if (!ok) state.SkipWithError("a cuRAND call failed");
  state.SetItemsProcessed(state.iterations() * kRandomCount);
}
void BM_CuRandHostNormal(benchmark::State& state) { curand_host<true>(state); }
void BM_CuRandHostUniform(benchmark::State& state) { curand_host<false>(state); }
#endif

}  // namespace

BENCHMARK(BM_PushNoop)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PushNoopWorkerRunning)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PushToExecute)->UseManualTime()->Iterations(2000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_WaitFinished)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_WaitPending)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MlpStep)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_MlpGemmFloor)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_MlpStepPaired)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_TrainStepPaired)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_SaveParameters)->Args({10000, 10})->Args({10000, 1})->Args({100000, 1})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LoadParameters)->Args({10000, 10})->Args({10000, 1})->Args({100000, 1})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_RandomNormal)->Unit(benchmark::kMicrosecond)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_RandomUniform)->Unit(benchmark::kMicrosecond)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_RandomNormalOneCore)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_RandomUniformOneCore)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_RandomNormalScalar)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_RandomUniformScalar)->Unit(benchmark::kMicrosecond)->UseRealTime();
#if ASYNCMLP_HAVE_CURAND
BENCHMARK(BM_CuRandHostNormal)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_CuRandHostUniform)->Unit(benchmark::kMicrosecond)->UseRealTime();
#endif

BENCHMARK_MAIN();
