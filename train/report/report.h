// report.h — what train_mlp prints of one run: its summary (report.cpp), each
// line a figure of train/report/run_figures.h. A study's tables are the
// study's own (train/studies/).
//
//   print_summary(r, std::cout);
#pragma once
#include <iosfwd>
#include <vector>

#include "train/options/options.h"
#include "train/plan/run_result.h"

namespace amlp::train {

void print_summary(const RunResult& r, std::ostream& out);

}  // namespace amlp::train
