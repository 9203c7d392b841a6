// blockers.cpp — the four blockers on the same pending work: a chain of
// elementwise ops ending in s = sum(h), then unrelated ops queued behind it on
// the same queue. Each blocker is timed with that work pending and again with
// nothing pending (its own cost).
#include <functional>

#include "train/async_demo/demo.h"

namespace amlp::demo {

void run_blockers(const Options& o) {
  const Device d = o.device;
  const int64_t n = size_or(o, 1000, 4096);
  constexpr int kChain = 10, kTail = 10, kIdle = 20;
  heading("blockers", "wait_to_read vs waitall vs to_host vs item on " + d.str());
  Tensor x = randn({n, n}, d), u = randn({n, n}, d);
  auto make_pending = [&] {  // returns s; the tail's ops keep their buffers alive until they ran
    Tensor h = x;
    for (int i = 0; i < kChain; ++i) h = add_scalar(h, 1.f);
    Tensor s = sum(h);
    Tensor t = u;
    for (int i = 0; i < kTail; ++i) t = add_scalar(t, 1.f);
    return s;
  };
  struct Blocker {
    const char* name;
    const char* waits_for;
    std::function<void(const Tensor&)> call;
  };
  const std::vector<Blocker> blockers = {
      {"s.wait_to_read()", "the op that wrote s (the chain) only", [](const Tensor& s) { s.wait_to_read(); }},
      {"waitall()", "every op on every queue", [](const Tensor&) { waitall(); }},
      {"s.to_host()", "a copy queued behind everything on s's queue", [](const Tensor& s) { (void)s.to_host(); }},
      {"s.item()", "the same: to_host() of one element", [](const Tensor& s) { (void)s.item(); }},
  };
  make_pending();
  waitall();  // warm-up
  std::vector<std::vector<double>> pending(blockers.size()), idle(blockers.size());
  for (int r = 0; r < repeats_or(o); ++r)
    for (size_t b = 0; b < blockers.size(); ++b) {  // interleaved, so drift hits all alike
      Tensor s = make_pending();
      const auto t0 = Clock::now();
      blockers[b].call(s);
      pending[b].push_back(since(t0));
      waitall();
      for (int k = 0; k < kIdle; ++k) {
        const auto t1 = Clock::now();
        blockers[b].call(s);
        idle[b].push_back(since(t1));
      }
    }
  std::printf("  pending work: %d add_scalar on %lld×%lld → s = sum(h), then %d unrelated ops queued behind it\n",
              kChain, (long long)n, (long long)n, kTail);
  row({{"blocker", -18}, {"work pending", 14}, {"nothing pending", 16}, {"  waits for", 0}});
  for (size_t b = 0; b < blockers.size(); ++b)
    row({{blockers[b].name, -18}, {human(median(pending[b])), 14}, {human(median(idle[b])), 16},
         {std::string("  ") + blockers[b].waits_for, 0}});
  explain({"Only wait_to_read() returns while the unrelated ops still run; to_host() and item() wait for them too,",
           "as waitall() does: their copy runs after everything queued before it."});
}

}  // namespace amlp::demo
