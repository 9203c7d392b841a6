#include "train/studies/sync_auto.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "framework/parse.h"
#include "train/runs/distributed_run.h"
#include "train/predict/predict.h"
#include "train/plan/plan.h"
#include "train/runs/run_plan.h"
#include "train/options/study_options.h"
#include "train/studies/comparisons.h"
#include "train/studies/study.h"
#include "train/studies/sweep.h"

namespace amlp::train {

namespace {

AutoCandidate candidate(const std::string& label, SyncMode sync, size_t bound, const AutoChoice& c) {
  AutoCandidate k;
  k.label = label;
  k.sync = sync;
  k.max_pending_bytes = bound;
  k.every = model_every(sync, c.batches, bound, c.bytes_per_batch);
  k.predicted_wall_s = predicted_wall_s(c.batches, k.every, c.host_s, c.device_s);
  const int backlog = predicted_backlog(c.batches, k.every, c.host_s, c.device_s, bound, c.bytes_per_batch);
  k.predicted_increase_bytes = backlog_increase(backlog, c.bytes_per_batch, bound, c.largest_tensor_bytes);
  k.fits = k.predicted_increase_bytes <= c.budget;
  return k;
}

}  // namespace

AutoChoice choose_sync(int batches, double host_s, double device_s, size_t bytes_per_batch,
                       size_t largest_tensor_bytes, size_t budget) {
  AutoChoice c;
  c.batches = std::max(1, batches);
  c.host_s = host_s;
  c.device_s = device_s;
  c.bytes_per_batch = bytes_per_batch;
  c.largest_tensor_bytes = largest_tensor_bytes;
  c.budget = budget;
  c.candidates.push_back(candidate("batch", {SyncPolicy::EveryBatch, 1}, 0, c));
  // every=K: the memory grows with K and the wall time shrinks, so the largest K that fits.
  int lo = 1, hi = c.batches;
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    if (candidate("", {SyncPolicy::EveryK, mid}, 0, c).fits) lo = mid;
    else hi = mid - 1;
  }
  if (lo >= 2 && lo < c.batches) c.candidates.push_back(candidate("every=" + std::to_string(lo), {SyncPolicy::EveryK, lo}, 0, c));
  c.candidates.push_back(candidate("none", {SyncPolicy::Never, 0}, 0, c));
  // A bound of one batch or more keeps the device as busy as none (the
  // model's K is N), so the least that does: two batches' bytes, as
  // --compare's bounded run, or what the budget leaves if that is less.
  // Under one batch the loop waits for each: batch, no candidate of its own.
  const size_t room = budget > largest_tensor_bytes ? budget - largest_tensor_bytes : 0;
  const size_t bound = std::min(2 * bytes_per_batch, room);
  if (bytes_per_batch && bound >= bytes_per_batch)
    c.candidates.push_back(candidate("bounded", {SyncPolicy::Never, 0}, bound, c));
  const AutoCandidate* best = &c.candidates.front();  // batch: the least memory when nothing fits
  for (const AutoCandidate& k : c.candidates) {
    if (!k.fits) continue;
    const bool faster = k.predicted_wall_s < best->predicted_wall_s * (1 - 1e-9);
    const bool as_fast = k.predicted_wall_s <= best->predicted_wall_s * (1 + 1e-9);
    const bool less_memory = k.predicted_increase_bytes < best->predicted_increase_bytes;
    // As fast and holding alike (h >= d: a batch each), the bound over none:
    // none's backlog stays at a batch only while the frontend stays slower
    // than the device, which a few synchronized batches cannot promise; a
    // frontend a little quicker over the run queues the rest of it, while
    // the bound holds whatever h and d do.
    const bool bound_over_none = k.max_pending_bytes && best->sync.policy == SyncPolicy::Never &&
                                 !best->max_pending_bytes &&
                                 k.predicted_increase_bytes <= best->predicted_increase_bytes;
    if (!best->fits || faster || (as_fast && (less_memory || bound_over_none))) best = &k;
  }
  c.chosen = *best;
  const AutoCandidate& base = c.candidates.front();
  char line[320];
  std::snprintf(line, sizeof line,
                "chose %s%s: the fastest predicted within the budget, then the least memory, then a bound: %.3f s "
                "(%.2fx batch's samples/s), %s of the %s budget",
                c.chosen.label.c_str(),
                c.chosen.max_pending_bytes ? (" at " + format_mb(double(c.chosen.max_pending_bytes))).c_str() : "",
                c.chosen.predicted_wall_s,
                c.chosen.predicted_wall_s > 0 ? base.predicted_wall_s / c.chosen.predicted_wall_s : 0.0,
                format_mb(double(c.chosen.predicted_increase_bytes)).c_str(), format_mb(double(budget)).c_str());
  c.why = line;
  if (!c.chosen.fits) c.why = "nothing fits, even one batch is over the budget: " + c.why;
  std::snprintf(line, sizeof line, "; from h %.3f ms, d %.3f ms, %s per batch; the others:", host_s * 1e3,
                device_s * 1e3, format_mb(double(bytes_per_batch)).c_str());
  c.why += line;
  for (const AutoCandidate& k : c.candidates) {
    if (k.label == c.chosen.label) continue;
    std::snprintf(line, sizeof line, " %s %.3f s, %s%s;", k.label.c_str(), k.predicted_wall_s,
                  format_mb(double(k.predicted_increase_bytes)).c_str(), k.fits ? "" : " (over)");
    c.why += line;
  }
  if (c.why.back() == ';') c.why.pop_back();
  return c;
}

AutoChoice resolve_sync_auto(const Options& o, std::ostream& out) {
  constexpr int kBatches = 8;
  const RunResult r = measure_synchronized(o, kBatches, o.host_work);
  int64_t h = std::llround(r.measured.host_s_per_batch * 1e9), d = std::llround(r.measured.device_s_per_batch * 1e9);
  int64_t bpb = int64_t(r.measured.bytes_per_batch), largest = int64_t(r.measured.largest_tensor_bytes);
  if (dist::ProcessGroup* g = rank_group(o)) {  // every rank chooses alike
    h = rank0_value(*g, h), d = rank0_value(*g, d);
    bpb = rank0_value(*g, bpb), largest = rank0_value(*g, largest);
  }
  AutoChoice c = choose_sync(o.batches, double(h) * 1e-9, double(d) * 1e-9, size_t(bpb), size_t(largest),
                             o.studies.find<SyncAutoSettings>()->budget);
  out << "sync auto: " << c.why << " (over " << r.asked.options.batches << " synchronized batches)" << std::endl;
  return c;
}

namespace {

// The models choose the mode from the first synchronized batches; the run is
// the single run, reported as one.
struct SyncAuto : Study {
  void settle(Options& o, std::ostream& out) const override {
    const AutoChoice c = resolve_sync_auto(o, out);
    o.sync = c.chosen.sync;
    o.max_pending_bytes = c.chosen.max_pending_bytes;
    o.sync_chosen = c.why;
  }
};

// After --host-work match (its h is what --sync auto measures with).
const RegisterStudy sync_auto{{"sync auto", true, 20,
                               [](const Options& o) {
                                 const SyncAutoSettings* s = o.studies.find<SyncAutoSettings>();
                                 return s && s->automatic;
                               },
                               [] { return std::unique_ptr<Study>(std::make_unique<SyncAuto>()); }}};

// clang-format off
const RegisterStudyOptions sync_auto_options{{"sync auto", 50,
    [](Declare& d) {
      d.option<size_t>("memory-budget", "BYTES", "0", read_bytes,
        "--sync auto: the most memory the run may hold for queued batches (its predicted increase)");
    },
    [](const po::variables_map& vm) -> std::any {
      const SyncAutoSettings s{vm["sync"].as<SyncChoice>().automatic, vm["memory-budget"].as<size_t>()};
      if (!s.automatic && !s.budget) return {};
      return s;
    },
    [](const Options& o) -> std::string {
      const SyncAutoSettings* s = o.studies.find<SyncAutoSettings>();
      if (!s) return "";
      if (!s->automatic) return "--memory-budget is the budget --sync auto chooses within: add --sync auto";
      if (!s->budget) return "--sync auto needs --memory-budget BYTES, the memory it may hold for queued batches";
      if (o.studies.asked<CompareSettings>() || o.studies.asked<SweepSettings>() || o.studies.asked<PoliciesSettings>())
        return "--sync auto chooses one run's mode; --compare, --sweep and --compare-policies run modes of their own";
      if (o.max_pending_bytes || o.max_pending_ops)
        return "--sync auto chooses the pending-bytes bound itself: drop --max-pending-bytes and --max-pending";
      if (o.alloc == AllocPolicy::Run || o.graph)
        return "--sync auto predicts with the enqueue memory model: not with --alloc run or --graph on";
      return "";
    }}};
// clang-format on

}  // namespace

}  // namespace amlp::train
