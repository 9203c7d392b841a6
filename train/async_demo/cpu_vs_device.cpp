// cpu_vs_device.cpp — one n×n matmul: cblas_sgemm called on this thread vs
// matmul + wait_to_read() through the device's queue. On a CPU device both run
// the same OpenBLAS kernel, so the difference is the queue's price; on a GPU
// the ratio is the GPU against this CPU, round trip included.
#include <cblas.h>

#include "train/async_demo/demo.h"

namespace amlp::demo {

void run_cpu_vs_device(const Options& o) {
  const Device d = o.device;
  const int64_t n = size_or(o, 1000, 1000);
  const int N = static_cast<int>(n);
  heading("cpu-vs-device", "matmul " + std::to_string(n) + "×" + std::to_string(n) +
                               ": CBLAS called directly vs through the " + d.str() + " queue");
  std::vector<float> A = randn({n, n}, Device::cpu(0)).to_host();
  std::vector<float> B = randn({n, n}, Device::cpu(0)).to_host();
  std::vector<float> C(A.size(), 0.f);  // pre-touched
  Tensor a = from_host({n, n}, A.data(), d), b = from_host({n, n}, B.data(), d);
  check_blas_room();  // a GEMM outside the queues: OutOfMemory, not OpenBLAS's endless retry, under ulimit -v
  auto direct = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.f, A.data(), N, B.data(), N, 0.f, C.data(), N);
  };
  auto queued = [&] {
    Tensor c = matmul(a, b);
    c.wait_to_read();
  };
  for (int w = 0; w < 2; ++w) {  // warm-up
    direct();
    queued();
  }
  std::vector<double> td, tq;
  const int reps = repeats_or(o);
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    direct();
    td.push_back(since(t0));
    t0 = Clock::now();
    queued();
    tq.push_back(since(t0));
  }
  const double md = median(td), mq = median(tq), flop = 2.0 * double(n) * double(n) * double(n);
  std::printf("  medians of %d:\n", reps);
  std::printf("  cblas_sgemm on the calling thread      %s  (%6.1f GFLOP/s)\n", human(md, 10).c_str(), flop / md * 1e-9);
  std::printf("  matmul + wait_to_read() on %-10s  %s  (%6.1f GFLOP/s)\n", d.str().c_str(), human(mq, 10).c_str(),
              flop / mq * 1e-9);
  std::printf("  queued/direct = %.3f×   difference %s\n", mq / md, human(mq - md).c_str());
  if (d.is_cuda())
    explain({"The GPU's time for one synchronized matmul (push, launch, run, wait) against this CPU's OpenBLAS."});
  else
    explain({"The same OpenBLAS kernel both ways: the queue adds a push and two wake-ups (µs), within the GEMM's noise."});
}

}  // namespace amlp::demo
