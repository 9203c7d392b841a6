// bench_op_cost.cpp — what one op costs the engine, apart from its kernel:
// `y = x + 1` on a one-element tensor, the async_demo's op, on cpu:0 and (when
// a GPU is visible) cuda:0.
//
//   BM_OpPush/<dev>      the frontend's time per push, the worker paused (t1)
//   BM_OpWorker/<dev>/n  the worker's time per op: a paused backlog of n ops,
//                        released, until the last was launched (t2) — its
//                        dependencies, allocation, bookkeeping and, on CUDA,
//                        the launch and the completion events
//   BM_OpRoundTrip/<dev> push and wait for each op (t3: one barrier per op)
//   BM_BackendKernel/<dev> the backend's kernel alone (be.kernels.scalar_add,
//                        core/backend/kernels.h: its stream, grid and launch check), called
//                        from a bare loop with the queue paused: no queue, no
//                        per-op hooks (events, NVTX)
//   BM_RawLaunch/cuda0   the floor: the same kernel launched n times
//                        from a bare loop (bench/raw_launch.cu), no engine.
//                        So the worker's time per op splits into the launch
//                        (RawLaunch), the backend's method around it
//                        (BackendKernel - RawLaunch) and the queue with the
//                        per-op hooks (OpWorker - BackendKernel)
//   BM_RecordedStep/<dev>/n  the worker's time per recorded step: a step of n
//                        chained one-element add_scalar ops under step graphs
//                        (runtime.h set_step_graph), whose scalar changes every
//                        step, so that each steady step is recorded again
//                        (verdict Update: on CUDA a stream capture, the graph
//                        updated in place and launched; on the CPU the kernels
//                        kept and run). 32 such steps are queued paused, then
//                        released, until the last was launched (per_step)
//   BM_RawCapture/cuda0/n  its floor: the same n kernels recorded from a bare
//                        loop (cudaStreamBeginCapture, n launches,
//                        cudaStreamEndCapture, cudaGraphExecUpdate, cudaGraph-
//                        Launch) per step (bench/raw_launch.cu), no engine
// <dev>: cpu0, cuda0 (skipped without a GPU). n: 256 (below the GPU's launch
// queue: the host's cost) and 2048 (past it: the GPU's pace too). per_op: the
// time per op.
//
//   build/bin/bench_op_cost --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "framework/asyncmlp.h"
#include "framework/core/backend/backend.h"
#include "framework/core/context.h"
#include "framework/core/memory/memory.h"
#include "framework/core/tensor/tensor_impl.h"
#include "framework/scoped_settings.h"
#if ASYNCMLP_RAW_LAUNCH
#include "bench/raw_launch.h"
#endif

namespace {

using amlp::Device;
using amlp::Tensor;
using Clock = std::chrono::steady_clock;

// Ops per measured release: the benchmark's argument. 256 stays below what
// a GPU queues before a launch waits for room (its launch queue), so the host's
// cost per op is measured; 2048 fills it, so the GPU's pace shows through.

bool usable(benchmark::State& state, Device d) {
  if (amlp::blocking()) {
    state.SkipWithError("synchronous mode (ASYNCMLP_BLOCKING) is on: pushes wait, nothing to measure");
    return false;
  }
  if (d.is_cuda() && amlp::cuda_device_count() == 0) {
    state.SkipWithError("no CUDA device visible");
    return false;
  }
  return true;
}

void BM_OpPush(benchmark::State& state, Device d) {
  if (!usable(state, d)) return;
  const int n = static_cast<int>(state.range(0));
  Tensor x = amlp::ones({1}, d);
  amlp::waitall();
  std::vector<Tensor> keep;
  keep.reserve(n);
  for (auto _ : state) {
    state.PauseTiming();
    keep.clear();
    amlp::waitall();
    std::optional<amlp::QueuePause> pause(d);
    state.ResumeTiming();
    for (int i = 0; i < n; ++i) keep.push_back(amlp::add_scalar(x, 1.f));
    state.PauseTiming();
    pause.reset();
    state.ResumeTiming();
  }
  amlp::waitall();
  state.counters["per_op"] =
      benchmark::Counter(double(state.iterations()) * n, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_OpWorker(benchmark::State& state, Device d) {
  if (!usable(state, d)) return;
  const int n = static_cast<int>(state.range(0));
  amlp::Queue& q = amlp::context(d).queue;
  Tensor x = amlp::ones({1}, d);
  amlp::waitall();
  std::vector<Tensor> ys;
  ys.reserve(n);
  for (auto _ : state) {
    std::optional<amlp::QueuePause> pause(std::in_place, d);
    for (int i = 0; i < n; ++i) ys.push_back(amlp::add_scalar(x, 1.f));
    const uint64_t last = q.stats().pushed;
    const auto t0 = Clock::now();
    pause.reset();  // released: the worker runs the backlog
    while (!q.launched(last)) std::this_thread::yield();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
    ys.clear();
    amlp::waitall();
  }
  state.counters["per_op"] = benchmark::Counter(double(state.iterations()) * n,
                                                   benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_OpRoundTrip(benchmark::State& state, Device d) {
  if (!usable(state, d)) return;
  Tensor x = amlp::ones({1}, d);
  amlp::waitall();
  for (auto _ : state) {
    Tensor y = amlp::add_scalar(x, 1.f);
    amlp::waitall();
    benchmark::DoNotOptimize(y);
  }
}

void BM_BackendKernel(benchmark::State& state, Device d) {
  if (!usable(state, d)) return;
  const int n = static_cast<int>(state.range(0));
  Tensor x = amlp::ones({1}, d), y = amlp::zeros({1}, d);
  amlp::waitall();
  amlp::Backend& be = *amlp::context(d).backend;
  const float* xp = static_cast<const float*>(amlp::detail::storage_of(x)->data());
  float* yp = static_cast<float*>(amlp::detail::storage_of(y)->data());
  for (auto _ : state) {
    std::optional<amlp::QueuePause> pause(std::in_place, d);  // the worker stays off the stream meanwhile
    const auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) be.kernels.scalar_add(be, xp, 1.f, yp, 1);
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
    pause.reset();
    // An op queued after them on the same stream: waiting for it waits for
    // them, so the next iteration starts with the GPU idle.
    amlp::add_scalar(x, 1.f).wait_to_read();
  }
  state.counters["per_op"] = benchmark::Counter(double(state.iterations()) * n,
                                                   benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_RawLaunch(benchmark::State& state) {
  if (!usable(state, Device::cuda(0))) return;
  const int n = static_cast<int>(state.range(0));
#if ASYNCMLP_RAW_LAUNCH
  amlp::waitall();
  for (auto _ : state) state.SetIterationTime(amlp::bench::raw_launch_seconds(n));
  state.counters["per_op"] = benchmark::Counter(double(state.iterations()) * n,
                                                   benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
#else
  state.SkipWithError("built without the CUDA backend");
#endif
}

// Steps per measured release of BM_RecordedStep and BM_RawCapture.
constexpr int kSteps = 32;

void BM_RecordedStep(benchmark::State& state, Device d) {
  if (!usable(state, d)) return;
  const int n = static_cast<int>(state.range(0));
  amlp::Queue& q = amlp::context(d).queue;
  Tensor x = amlp::ones({1}, d);
  amlp::waitall();
  amlp::StepGraphStats stats;
  uint64_t step = 0, recorded = 0, steps = 0;
  {
    amlp::ScopedStepGraph graphs({d}, stats, /*warmup=*/1);
    // One step: the chain, its buffers the graph slots' (as train_mlp's
    // --graph on); its scalar moves every step, so a steady step is
    // recorded again rather than replayed.
    const auto one_step = [&] {
      amlp::ScopedStepMemory memory({d});
      amlp::begin_step(d);
      Tensor y = x;
      const float add = 1.f + float(++step % 1024) * 0x1p-10f;
      for (int i = 0; i < n; ++i) y = amlp::add_scalar(y, add);
      amlp::end_step(d);
    };
    for (int i = 0; i < 4; ++i) one_step();  // learned, armed, both slots recorded
    amlp::waitall();
    const amlp::StepGraphStats before = amlp::step_graph_stats(d);
    for (auto _ : state) {
      std::optional<amlp::QueuePause> pause(std::in_place, d);
      for (int i = 0; i < kSteps; ++i) one_step();
      const uint64_t last = q.stats().pushed;
      const auto t0 = Clock::now();
      pause.reset();  // released: the worker records and launches each step
      while (!q.launched(last)) std::this_thread::yield();
      state.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
      amlp::waitall();
    }
    const amlp::StepGraphStats after = amlp::step_graph_stats(d);
    recorded = (after.updated + after.captured) - (before.updated + before.captured);
    steps = after.steps - before.steps;
  }
  if (recorded != steps || steps == 0) {  // what is timed must be recordings, nothing else
    state.SkipWithError("the measured steps were not all recorded (see step_graph_stats)");
    return;
  }
  state.counters["per_step"] = benchmark::Counter(double(state.iterations()) * kSteps,
                                                    benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["recorded"] = double(recorded);
}

void BM_RawCapture(benchmark::State& state) {
  if (!usable(state, Device::cuda(0))) return;
  const int n = static_cast<int>(state.range(0));
#if ASYNCMLP_RAW_LAUNCH
  amlp::waitall();
  for (auto _ : state) state.SetIterationTime(amlp::bench::raw_capture_seconds(n, kSteps));
  state.counters["per_step"] = benchmark::Counter(double(state.iterations()) * kSteps,
                                                    benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
#else
  state.SkipWithError("built without the CUDA backend");
#endif
}

}  // namespace

BENCHMARK_CAPTURE(BM_RecordedStep, cpu0, Device::cpu(0))->Arg(12)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_RecordedStep, cuda0, Device::cuda(0))->Arg(12)->Arg(24)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RawCapture)->Name("BM_RawCapture/cuda0")->Arg(12)->Arg(24)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_BackendKernel, cpu0, Device::cpu(0))->Arg(256)->Arg(2048)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_BackendKernel, cuda0, Device::cuda(0))->Arg(256)->Arg(2048)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RawLaunch)->Name("BM_RawLaunch/cuda0")->Arg(256)->Arg(2048)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_OpPush, cpu0, Device::cpu(0))->Arg(2048)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_OpPush, cuda0, Device::cuda(0))->Arg(2048)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_OpWorker, cpu0, Device::cpu(0))->Arg(256)->Arg(2048)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_OpWorker, cuda0, Device::cuda(0))->Arg(256)->Arg(2048)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_OpRoundTrip, cpu0, Device::cpu(0))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_OpRoundTrip, cuda0, Device::cuda(0))->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
