// comparisons.h — the studies whose runs are modes back to back, one table:
// --compare (the sync modes) and --compare-policies (the allocation
// policies); and the one run --sync asks for, when neither is asked (study.h).
// --sweep runs --compare's modes at each fraction (train/studies/sweep.h).
//
//   if (const CompareSettings* c = o.studies.find<CompareSettings>())
//     run_plan(compare_plan(o, c->every), out, results);
#pragma once
#include <vector>

#include "train/plan/run_result.h"

namespace amlp::train {

// --compare: on; --compare-every: the K of its every=K modes.
struct CompareSettings {
  static constexpr const char* kStudy = "compare";
  std::vector<int> every{2, 10};
};
// --compare-policies: on (nothing else to set).
struct PoliciesSettings {
  static constexpr const char* kStudy = "compare-policies";
};

// --compare-every's value: "2,10", each in [1, 10^6], none twice (two runs of
// one mode would write one memory log); throws amlp::ParseError.
std::vector<int> read_compare_every(const std::string& text);

// --compare's runs: batch, none, every=K for each K of `every`, and bounded
// (none under back-pressure: --max-pending-bytes, or two batches' bytes
// measured by the runs before it), and with --graph on a graph row; --sync
// is ignored, back-pressure applies to the bounded run only.
std::vector<RunSpec> compare_plan(const Options& o, const std::vector<int>& every);

// "" unless --save is given beside `study` (its option, "--compare"), which
// trains a model per mode: then the line that says so.
std::string one_model_problem(const Options& o, const char* study);

}  // namespace amlp::train
