// sync_vs_async.cpp — y = x + 1, N times, with a barrier each iteration vs one
// at the end. t1 (push), t2 (run) and t3 (one barrier's fixed cost) are
// measured on their own, then the book's models are checked against both runs:
// N·(t1 + t2 + t3) for a barrier each op, t1 + N·t2 + t3 for one at the end
// (and N·t1 + t2 + t3 when the frontend, not the backend, is the slower).
#include <algorithm>

#include "train/async_demo/demo.h"

namespace amlp::demo {

namespace {

// One barrier's fixed cost is calibrated on a synced run of this many ops (measure()).
constexpr int64_t kCalib = 500;

// Each repeat's figures: t1, t2 and t3 per op, the calibration's time per op,
// and the synced and async loops' times (the async loop's pushes alone too).
struct Times {
  std::vector<double> v1, v2, v3, rt, synced, async, async_push;
};

Times measure(const Device d, const Tensor& x, const int64_t N, const int reps) {
  // t1, t2: push N ops onto a paused queue (the frontend alone), then let the
  // worker drain them (the backend alone).
  auto paused_run = [&](double* t1, double* t2) {
    Clock::time_point released;
    {
      PausedDevice paused(d);
      const auto t0 = Clock::now();
      for (int64_t i = 0; i < N; ++i) Tensor y = add_scalar(x, 1.f);
      *t1 = since(t0) / double(N);
      released = Clock::now();
    }  // the queue runs from here
    waitall();
    *t2 = since(released) / double(N);
  };
  auto synced_loop = [&](int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      Tensor y = add_scalar(x, 1.f);
      y.wait_to_read();
    }
  };
  // t3: one barrier's fixed cost, calibrated on a short synced run of the same
  // op (kCalib iterations: push, wake the worker, run, wake the waiter) minus
  // its push and run. Thread wake-ups dominate it, and on a VM their cost
  // moves (~5 µs ↔ ~60 µs) over seconds, so it is calibrated again in each
  // repeat, right around the runs it models.
  auto round_trip = [&] {
    const auto t0 = Clock::now();
    synced_loop(kCalib);
    return since(t0) / double(kCalib);
  };
  auto async_loop = [&](int64_t n) {  // returns how long the pushes took
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < n; ++i) Tensor y = add_scalar(x, 1.f);
    const double pushed = since(t0);
    waitall();
    return pushed;
  };

  double t1_r = 0, t2_r = 0;
  paused_run(&t1_r, &t2_r);  // warm-up: the pool caches N buffers
  synced_loop(std::min<int64_t>(N, 1000));
  async_loop(std::min<int64_t>(N, 1000));
  Times m;
  for (int r = 0; r < reps; ++r) {
    paused_run(&t1_r, &t2_r);
    const double rt_before = round_trip();
    auto t0 = Clock::now();
    synced_loop(N);
    m.synced.push_back(since(t0));
    t0 = Clock::now();
    m.async_push.push_back(async_loop(N));
    m.async.push_back(since(t0));
    m.rt.push_back(0.5 * (rt_before + round_trip()));
    m.v1.push_back(t1_r);
    m.v2.push_back(t2_r);
    m.v3.push_back(std::max(0.0, m.rt.back() - t1_r - t2_r));
  }
  return m;
}

// The three costs, both loops against the book's models, and what they mean.
void report(const Times& m, const int64_t N, const int reps) {
  const double t1 = median(m.v1), t2 = median(m.v2), t3 = median(m.v3);
  const double ms = median(m.synced), ma = median(m.async);
  const auto t3_range = std::minmax_element(m.v3.begin(), m.v3.end());
  const double model_s = double(N) * (t1 + t2 + t3), model_a = t1 + double(N) * t2 + t3;
  std::printf("  t1 frontend push, per op     %s   (pushed onto a paused queue)\n", human(t1, 10).c_str());
  std::printf("  t2 backend execution, per op %s   (that backlog drained by the worker)\n", human(t2, 10).c_str());
  std::printf("  t3 one barrier's fixed cost  %s   (a %lld-op synced run: %s per op, minus t1 and t2;\n"
              "                                             over the repeats: %s .. %s)\n",
              human(t3, 10).c_str(), static_cast<long long>(kCalib), human(median(m.rt)).c_str(),
              human(*t3_range.first).c_str(), human(*t3_range.second).c_str());
  auto model_row = [&](const char* what, double measured, double model) {
    char e[16];
    std::snprintf(e, sizeof e, "%+.0f%%", 100.0 * (model - measured) / measured);
    row({{what, -34}, {human(measured), 11}, {human(model), 11}, {e, 8}});
  };
  row({{"medians of " + std::to_string(reps) + ":", -34}, {"measured", 11}, {"model", 11}, {"error", 8}});
  model_row("barrier each op  N·(t1+t2+t3)", ms, model_s);
  model_row("one barrier      t1+N·t2+t3", ma, model_a);
  if (t1 > t2) model_row("one barrier      N·t1+t2+t3", ma, double(N) * t1 + t2 + t3);
  const double t1_busy = median(m.async_push) / double(N);
  std::printf("  one barrier at the end is %.1f× faster than one per op; in it the frontend pushed at %s per op\n",
              ms / ma, human(t1_busy).c_str());
  std::vector<std::string> lines = {
      "A barrier each op pays t1 + t2 + t3 every time; with one barrier, pushing overlaps running and only",
      t1 > t2 ? "the slower of t1, t2 counts N times: here t1, so N·t1+t2+t3 applies (the book assumes t2 ≥ t1)."
              : "the slower of t1, t2 counts N times: here t2, so the book's t1+N·t2+t3 applies."};
  if (t1_busy > 1.25 * t1)
    lines.push_back("Pushing while the worker runs costs more than pushing alone (a shared lock and caches): the "
                    "models read low.");
  explain(lines);
}

}  // namespace

void run_sync_vs_async(const Options& o) {
  const Device d = o.device;
  const int64_t N = o.ops;
  heading("sync-vs-async", "y = x + 1, " + std::to_string(N) + " times, on " + d.str());
  Tensor x = ones({1, 2}, d);  // the book's x
  x.wait_to_read();
  const int reps = repeats_or(o);
  report(measure(d, x, N, reps), N, reps);
}

}  // namespace amlp::demo
