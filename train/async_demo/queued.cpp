// queued.cpp — the chapter's first benchmark: 10 × (a = randn(n, n); b = a·a)
// queued, then waitall(). How long the frontend took to queue it vs until it
// had finished, and how much was still pending when the loop returned.
#include "train/async_demo/demo.h"

namespace amlp::demo {

void run_queued(const Options& o) {
  const Device d = o.device;
  const int64_t n = size_or(o, 1000, 4096);
  constexpr int kIters = 10;
  auto queue_work = [&] {
    Tensor b;
    for (int i = 0; i < kIters; ++i) {
      Tensor a = randn({n, n}, d);
      b = matmul(a, a);
    }
    return b;
  };
  heading("queued", "work queued vs work finished on " + d.str());
  queue_work();
  waitall();  // warm-up
  std::vector<double> queued, finished, depth;
  const int reps = repeats_or(o);
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    Tensor b = queue_work();
    queued.push_back(since(t0));
    depth.push_back(static_cast<double>(queue_stats(d).depth));
    waitall();
    finished.push_back(since(t0));
  }
  const double q = median(queued), f = median(finished);
  std::printf("  %d × (randn %lld×%lld, matmul), medians of %d:\n", kIters, (long long)n, (long long)n, reps);
  std::printf("  queued after    %s   (frontend back from the last push)\n", human(q, 12).c_str());
  std::printf("  finished after  %s   (waitall() returned)   finished/queued = %.0f×\n", human(f, 12).c_str(), f / q);
  std::printf("  queue depth right after queueing: %.0f of %d ops still pending\n", median(depth), 2 * kIters);
  explain({"The loop returned once its ops were queued; only waitall() waited for them to run.",
           "A timer without a blocker measures queueing, not computing."});
}

}  // namespace amlp::demo
