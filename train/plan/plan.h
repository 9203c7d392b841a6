// plan.h — the runs train_mlp makes for its options, in order (the files
// they write: train/plan/outputs.h): one run (--sync), the sync modes back to
// back (--compare), or the allocation policies (--compare-policies); with
// --devices each run trains on every device. train/runs/run_plan.h runs them.
//
//   std::vector<PlannedRun> plan = plan_runs(options);
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "train/plan/run_result.h"

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

}  // namespace amlp::train
