// report.cpp — what a run prints: its summary (report.h); a study's tables are
// the study's (train/studies/).
#include "train/report/report.h"

#include <algorithm>
#include <ostream>
#include <string>

#include "train/report/run_figures.h"

namespace amlp::train {

void print_summary(const RunResult& r, std::ostream& out) {
  out << "summary\n";
  for (const auto& [label, text] : summary_lines(r))
    out << "  " << label << std::string(20 - std::min<size_t>(20, label.size()), ' ') << text << "\n";
  out.flush();
}

}  // namespace amlp::train
