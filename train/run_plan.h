// run_plan.h — the runs train_mlp makes for its options, in order (the
// files they write: train/outputs.h): one run (--sync), the sync modes back to back
// (--compare), or the allocation policies (--compare-policies); with
// --devices each run trains on every device.
//
//   std::vector<PlannedRun> plan = plan_runs(options);
//   run_plan(plan, std::cout, results);            // each run's lines, its result appended as it ends
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "train/run_result.h"

namespace amlp::train {

enum class PlanKind {
  Single,    // the run --sync asks for
  Compare,   // --compare: batch, none, every=K for each K in --compare-every, bounded
  Policies,  // --compare-policies: enqueue, run, and on a CPU device run with the data queue
};

struct PlannedRun {
  PlanKind kind = PlanKind::Single;
  RunSpec spec;
  std::string tag;   // in file names: batch, none, every10, bounded, enqueue, run, run+data
  std::string like;  // --compare-policies: which framework behaves like this
  // --compare's bounded run without --max-pending-bytes: bounded at two
  // batches' footprint, the largest bytes per batch of the runs before it.
  bool bound_from_earlier = false;
};

PlanKind plan_kind(const Options& o);
std::vector<PlannedRun> plan_runs(const Options& o);

// Runs `plan` in order, printing a heading before each run of a comparison,
// appending each result to `results` as it ends (a failed run's partial
// result too, before RunFailed propagates); stops after an interrupted run.
// The devices are left clean (nothing pending, the cache handed back).
void run_plan(const std::vector<PlannedRun>& plan, std::ostream& out, std::vector<RunResult>& results);

// `batches` synchronized batches of the run `s` describes with the host work
// `w` (none by default), without back-pressure or a memory log, after 3 not
// measured (cold caches, threads starting; `warm_up` false: the device is
// warm already), quietly: their d is the device's time per batch, their h
// what the frontend spends per batch.
RunResult measure_synchronized(const RunSettings& s, int batches, const HostWork& w = HostWork{},
                               bool warm_up = true);

// --host-work match: the device's time per batch, measured over 8
// synchronized batches of the run `s` describes, after 3 not measured
// (printed to `out`); any other setting is returned as it is.
HostWork resolve_host_work(const RunSettings& s, std::ostream& out);

}  // namespace amlp::train
