// plan.h — the runs train_mlp makes, as RunSpecs: one run (--sync) here,
// and what a study's plan is made of (train/studies/: --compare's modes, the
// allocation policies, --sweep's fractions); the files they write:
// train/plan/outputs.h. train/runs/run_plan.h runs them.
//
//   std::vector<RunSpec> plan = plan_runs(options);        // the one run
//   plan.push_back(planned_run(options, "every=10", "every10"));  // one of a study's runs
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "train/plan/run_result.h"

namespace amlp::train {

// One of a study's runs of `o`, reported under `label`, its memory log tagged
// with `tag` (outputs.h tagged_path).
RunSpec planned_run(const Options& o, const std::string& label, const std::string& tag);
// With --graph on, a comparison's rows run without step graphs and one more
// row, "graph", runs unsynchronized and unbounded with them; with it off,
// the rows run without them.
void add_graph_row(const Options& o, std::vector<RunSpec>& rows);
// The one run --sync asks for, labelled by its mode ("(bounded)" under back-pressure).
std::vector<RunSpec> plan_runs(const Options& o);
// The memory logs a plan's runs write, in order.
std::vector<std::string> memory_logs(const std::vector<RunSpec>& plan);

}  // namespace amlp::train
