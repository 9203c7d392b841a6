// predict_comm.cpp — the throughput model's communication term for a run
// across processes (--distributed mpi; train/predict/predict.h).
#include <algorithm>
#include <chrono>
#include <vector>

#include "train/predict/predict.h"

namespace amlp::train {

namespace {

// The median seconds of `reps` all-reduces of n floats (after one not timed).
double time_all_reduce(dist::ProcessGroup& g, size_t n, int reps) {
  std::vector<float> x(n, 1.f), y(n);
  g.all_reduce_sum(x.data(), y.data(), n);
  std::vector<double> s;
  for (int i = 0; i < reps; ++i) {
    g.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    g.all_reduce_sum(x.data(), y.data(), n);
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(s.begin(), s.begin() + s.size() / 2, s.end());
  return s[s.size() / 2];
}

}  // namespace

CommCost comm_cost(dist::ProcessGroup& g) {
  static CommCost c = [&] {
    constexpr size_t kLarge = size_t(1) << 20;  // 4 MiB of floats
    CommCost m;
    m.alpha_s = time_all_reduce(g, 1, 9);
    const double large = time_all_reduce(g, kLarge, 5);
    m.beta_s_per_byte = std::max(0.0, large - m.alpha_s) / double(kLarge * sizeof(float));
    // Every rank uses rank 0's figures, so every rank predicts alike.
    std::vector<float> v{float(m.alpha_s), float(m.beta_s_per_byte * 1e9)};
    g.broadcast(v, 0);
    m.alpha_s = v[0];
    m.beta_s_per_byte = v[1] * 1e-9;
    return m;
  }();
  return c;
}

double exposed_comm_s(const RunSpec& s, double device_s, const CommCost& c) {
  // The layers' widths: features -> hidden... -> 1; a layer's work ~ in x out.
  std::vector<int64_t> widths{s.options.features};
  for (int64_t h : s.options.hidden.hidden) widths.push_back(h);
  widths.push_back(1);
  double work = 0;
  for (size_t l = 0; l + 1 < widths.size(); ++l) work += double(widths[l]) * double(widths[l + 1]);
  if (work <= 0) return 0;
  // The backward is about 2/3 of a batch's work, last layer first; each layer's
  // weight and bias are reduced once its backward queued them, one after the
  // other on the communication queue.
  const double backward = device_s * 2.0 / 3.0;
  double ready = 0, end = 0;
  for (size_t l = widths.size() - 1; l-- > 0;) {
    const double in = double(widths[l]), out = double(widths[l + 1]);
    ready += backward * in * out / work;
    for (double floats : {in * out, out}) end = std::max(end, ready) + c.alpha_s + c.beta_s_per_byte * floats * 4;
  }
  double exposed = std::max(0.0, end - backward);
  if (s.options.sync.policy == SyncPolicy::EveryBatch)
    exposed += c.alpha_s;  // the loss's own reduction, read each batch
  return exposed;
}

}  // namespace amlp::train
