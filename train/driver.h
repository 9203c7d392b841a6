// driver.h — train_mlp after its options parsed: set up the device, run one
// experiment or --compare, write the summary, trace and logs, and turn a
// failure into one line on `err` and exit status 1.
//
//   ParseOutcome p = parse_options(argc, argv);  ...
//   return run_driver(p.options, std::cout, std::cerr);
#pragma once
#include <iosfwd>
#include <vector>

#include "train/experiment.h"
#include "train/options.h"

namespace amlp::train {

// Returns the exit status: 0, or kExitRunFailed after printing
// "train_mlp: error: ..." (one line) on `err`. `results`, when given,
// receives the runs that finished.
int run_driver(const Options& o, std::ostream& out, std::ostream& err, std::vector<RunResult>* results = nullptr);

}  // namespace amlp::train
