// report.h — what train_mlp prints of its runs: one run's summary, the
// --compare table and the --compare-policies table (report.cpp).
//
//   print_summary(r, std::cout);
//   print_compare_table(results, std::cout);
#pragma once
#include <iosfwd>
#include <vector>

#include "train/options/options.h"
#include "train/plan/run_result.h"

namespace amlp::train {

void print_summary(const RunResult& r, std::ostream& out);
void print_compare_table(const std::vector<RunResult>& rs, std::ostream& out);
void print_policy_table(const std::vector<RunResult>& rs, std::ostream& out);

}  // namespace amlp::train
