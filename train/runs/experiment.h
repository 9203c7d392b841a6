// experiment.h — one training run of the d2l "Asynchronous Computation"
// experiment, measured: the book's loop (train/runs/run_meter.h measures it,
// train/predict/predict.h states what it should cost).
//
//   RunSpec s{options, "none"};                    // or a run of plan_runs(options)
//   RunResult r = run_experiment(s, std::cout);    // prints the book's lines
//   print_summary(r, std::cout);                  // train/report/report.h
#pragma once
#include <iosfwd>
#include <vector>

#include "framework/device.h"
#include "train/plan/run_result.h"

namespace amlp::train {

// Runs one experiment on a clean device (waitall, empty cache, fresh peaks),
// printing the book's lines to `out`. When the run fails it drops the work
// still queued (drop_pending()), waits for the op running, and throws
// RunFailed (naming the mode and the batch; for out of memory, how to avoid
// it); the memory log keeps the rows written so far, and the row of a batch
// that failed while its loss was read is written with the loss empty. Once
// interrupt_signal() is set it queues no further batch: the queued ones
// finish and the result is marked Interrupted.
RunResult run_experiment(const RunSpec& spec, std::ostream& out);

// A clean device: nothing pending, the cache handed back to the system (and
// glibc's free lists trimmed, so the RSS figures of back-to-back runs stand
// alone), peaks reset.
void fresh_device(Device d);

}  // namespace amlp::train
