// plan.h — the runs train_mlp makes for its options, in order (the files
// they write: train/plan/outputs.h): one run (--sync), the sync modes back to
// back (--compare), or the allocation policies (--compare-policies); with
// --devices each run trains on every device. train/runs/run_plan.h runs them.
//
//   std::vector<RunSpec> plan = plan_runs(options);
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "train/plan/run_result.h"

namespace amlp::train {

PlanKind plan_kind(const Options& o);
std::vector<RunSpec> plan_runs(const Options& o);

}  // namespace amlp::train
