// run_plan.h — running what the plan lists (train/plan/plan.h), and the
// synchronized measurements the studies take before their runs.
//
//   run_plan(plan_runs(options), std::cout, results);  // each run's lines, its result appended as it ends
#pragma once
#include <iosfwd>
#include <vector>

#include "train/plan/plan.h"
#include "train/plan/run_result.h"

namespace amlp::train {

// Runs `plan` in order, printing the heading a study gives a run before it,
// appending each result to `results` as it ends (a failed run's partial
// result too, before RunFailed propagates); stops after an interrupted run.
// The devices are left clean (nothing pending, the cache handed back).
void run_plan(const std::vector<RunSpec>& plan, std::ostream& out, std::vector<RunResult>& results);

// `batches` synchronized batches of the run `s` describes with the host work
// `w` (none by default), without back-pressure or a memory log, after 3 not
// measured (cold caches, threads starting; `warm_up` false: the device is
// warm already), quietly: their d is the device's time per batch, their h
// what the frontend spends per batch.
RunResult measure_synchronized(const Options& s, int batches, const HostWork& w = HostWork{},
                               bool warm_up = true);

// --host-work match: the device's time per batch, measured over 8
// synchronized batches of the run `s` describes, after 3 not measured
// (printed to `out`); any other setting is returned as it is.
HostWork resolve_host_work(const Options& s, std::ostream& out);

}  // namespace amlp::train
