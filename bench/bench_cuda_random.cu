// bench_cuda_random.cu — the device's normal generator (cuda/random.cu:
// cuRAND's Philox4x32-10 words through the CPU's Box–Muller, box_muller.h,
// bitwise the CPU backend's numbers) beside curandGenerateNormal (cuRAND's
// own Box–Muller with fast intrinsics), at the same seed and offset, on one
// stream, timed with CUDA events after a warm-up. The target: within 10% of
// cuRAND's time.
//
//   BM_DeviceNormal/<n>          launch_normal (what randn runs on a GPU)
//   BM_CurandGenerateNormal/<n>  curandGenerateNormal into the same buffer
//
// Without a GPU every benchmark reports "no CUDA GPU visible" and the program exits 0.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>
#include <curand.h>

#include <string>

#include "framework/cuda/cuda_check.h"
#include "framework/cuda/cuda_handles.h"
#include "cuda_bench.h"
#include "framework/cuda/kernels.h"

namespace {

using namespace amlp::cuda;

constexpr int kRepeat = 20;  // draws per timed iteration
constexpr size_t kMaxN = size_t(1) << 26;

struct Bench {
  std::string no_gpu;
  StreamPtr stream;
  CurandPtr rng;
  DeviceBuffer y;
  EventPtr start, stop;

  Bench() {
    no_gpu = amlp::bench::use_first_gpu();
    if (!no_gpu.empty()) return;
    stream = make_stream();
    rng = make_curand(CURAND_RNG_PSEUDO_PHILOX4_32_10);
    AMLP_CUDA_CHECK(curandSetStream(rng.get(), stream.get()));
    y = device_alloc(kMaxN * sizeof(float));
    start = make_timing_event();
    stop = make_timing_event();
  }

  template <class Body>
  void measure(benchmark::State& state, size_t n, Body body) {
    for (int i = 0; i < 3; ++i) body();
    AMLP_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    for (auto _ : state)
      state.SetIterationTime(amlp::bench::seconds_per_call(stream.get(), start.get(), stop.get(), kRepeat, body));
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(n * sizeof(float)));
  }
};

Bench& bench() {
  static Bench* b = new Bench();  // leaked: the CUDA runtime may be gone before static destructors
  return *b;
}

void BM_DeviceNormal(benchmark::State& state) {
  Bench& b = bench();
  if (!b.no_gpu.empty()) return state.SkipWithError(b.no_gpu.c_str());
  const size_t n = static_cast<size_t>(state.range(0));
  uint64_t offset = 0;
  b.measure(state, n, [&] {
    launch_normal(static_cast<float*>(b.y.get()), n, 1234, offset, 0.f, 1.f, b.stream.get());
    offset += n;
  });
}

void BM_CurandGenerateNormal(benchmark::State& state) {
  Bench& b = bench();
  if (!b.no_gpu.empty()) return state.SkipWithError(b.no_gpu.c_str());
  const size_t n = static_cast<size_t>(state.range(0));
  uint64_t offset = 0;
  b.measure(state, n, [&] {
    AMLP_CUDA_CHECK(curandSetPseudoRandomGeneratorSeed(b.rng.get(), 1234));  // as the backend did per op
    AMLP_CUDA_CHECK(curandSetGeneratorOffset(b.rng.get(), offset));
    AMLP_CUDA_CHECK(curandGenerateNormal(b.rng.get(), static_cast<float*>(b.y.get()), n, 0.f, 1.f));
    offset += n;
  });
}

BENCHMARK(BM_DeviceNormal)->RangeMultiplier(16)->Range(1 << 14, 1 << 26)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CurandGenerateNormal)
    ->RangeMultiplier(16)
    ->Range(1 << 14, 1 << 26)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
