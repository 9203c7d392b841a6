// driver.h — train_mlp after its options parsed: set up the device, run one
// experiment or --compare, write the summary, trace and logs, and turn a
// failure into one line on `err` and exit status 1.
//
//   ParseOutcome p = parse_options(argc, argv);  ...
//   return run_driver(p.options, std::cout, std::cerr);
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "train/options/options.h"
#include "train/plan/run_result.h"

namespace amlp::train {

// Returns the exit status: 0; kExitRunFailed after printing
// "train_mlp: error: ..." (one line) on `err`; or 128 + the signal after
// "train_mlp: interrupted at batch N of M ..." when interrupt_signal() was
// set (train/runs/interrupt.h). The summary (--summary-json) and the trace are
// written in every case, each run marked with how it ended. `results`, when
// given, receives the runs, a failed or interrupted one with what it measured.
int run_driver(const Options& o, std::ostream& out, std::ostream& err, std::vector<RunResult>* results = nullptr);

// `line` and a newline in one write: several ranks' lines share mpirun's
// output, and a line written in pieces would interleave with another rank's.
void write_line(std::ostream& err, const std::string& line);

}  // namespace amlp::train
