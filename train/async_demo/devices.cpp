// devices.cpp — independent work on two devices, in sequence vs in parallel:
// cpu:0 + cpu:1, or the GPU + cpu:0. The work is an in-place elementwise
// update (w -= lr·g, the SGD kernel: one thread, no allocation), calibrated so
// each device is busy about as long as the other. (A GEMM would not show the
// overlap on a CPU: OpenBLAS already spreads one GEMM over every core.)
#include "train/async_demo/demo.h"

namespace amlp::demo {

void run_devices(const Options& o) {
  const Device first = o.device;
  const Device second = first.is_cuda() ? Device::cpu(0) : Device::cpu(first.index == 1 ? 0 : 1);
  const Device devs[2] = {first, second};
  heading("devices", "independent work on " + first.str() + " and " + second.str() + ", in sequence vs in parallel");
  struct Work {
    Tensor w, g, none;
    int64_t ops = 0;
  };
  Work work[2];
  for (int i = 0; i < 2; ++i) {
    const int64_t n = devs[i].is_cuda() ? (o.size ? o.size * o.size : 16 << 20) : (o.size ? o.size * o.size : 128 << 10);
    work[i].w = randn({n}, devs[i]);
    work[i].g = randn({n}, devs[i]);
  }
  auto push = [&](int i, int64_t ops) {
    for (int64_t k = 0; k < ops; ++k) sgd_update_(work[i].w, work[i].g, work[i].none, 1e-6f, 0.f, 0.f, 1.f);
  };
  // Calibrate: ops per device for ~kTarget seconds of work each.
  constexpr double kTarget = 0.15;
  for (int i = 0; i < 2; ++i) {
    push(i, 20);
    waitall();
    int64_t probe = 50;
    double t = 0;
    for (;;) {
      const auto t0 = Clock::now();
      push(i, probe);
      waitall();
      t = since(t0);
      if (t > 0.05 || probe > (1 << 20)) break;
      probe *= 4;
    }
    work[i].ops = std::max<int64_t>(10, static_cast<int64_t>(kTarget / (t / double(probe))));
  }
  std::vector<double> alone[2], seq, par;
  const int reps = repeats_or(o);
  for (int r = 0; r < reps; ++r) {
    double each[2];
    for (int i = 0; i < 2; ++i) {
      const auto t0 = Clock::now();
      push(i, work[i].ops);
      waitall();
      each[i] = since(t0);
      alone[i].push_back(each[i]);
    }
    seq.push_back(each[0] + each[1]);
    const auto t0 = Clock::now();
    push(0, work[0].ops);
    push(1, work[1].ops);
    waitall();
    par.push_back(since(t0));
  }
  const double a0 = median(alone[0]), a1 = median(alone[1]), s = median(seq), p = median(par);
  std::printf("  work: w -= lr·g in place on %lld floats (%s, %lld ops) and %lld floats (%s, %lld ops); medians of %d\n",
              (long long)work[0].w.numel(), first.str().c_str(), (long long)work[0].ops,
              (long long)work[1].w.numel(), second.str().c_str(), (long long)work[1].ops, reps);
  std::printf("  %-7s alone %s   %-7s alone %s\n", first.str().c_str(), human(a0, 10).c_str(), second.str().c_str(),
              human(a1, 10).c_str());
  std::printf("  in sequence (one, wait, the other)  %s\n", human(s, 10).c_str());
  std::printf("  in parallel (both queued, waitall)  %s   speedup %.2f× (perfect overlap: %.2f×)\n",
              human(p, 10).c_str(), s / p, s / std::max(a0, a1));
  std::vector<std::string> lines = {
      "Each device has its own queue and worker, so both run at once: at best, in parallel takes the slower one's time."};
  if (!first.is_cuda())
    lines.push_back("Both workers share this machine's cores with the frontend and other work: the speedup moves with "
                    "the load.");
  explain(lines);
}

}  // namespace amlp::demo
