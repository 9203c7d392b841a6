// The training loop's parts (train/runs/loop.h), registered in the order
// they act at each point of a batch. A new feature: its part in a file of
// its own (or its feature's), declared and registered here.
#include <ostream>

#include "train/runs/loop.h"

namespace amlp::train {

std::unique_ptr<LoopPart> host_work_part(Loop&);     // host_work_part.cpp: --host-work
std::unique_ptr<LoopPart> book_lines_part(Loop&);    // experiment.cpp: the book's "batch 50, time ..."
std::unique_ptr<LoopPart> step_graph_part(Loop&);    // step_graph_part.cpp: --graph on
std::unique_ptr<LoopPart> check_finite_part(Loop&);  // check_finite_part.cpp: --check-finite
std::unique_ptr<LoopPart> live_status_part(Loop&);   // live_status.cpp: the status line
std::unique_ptr<LoopPart> epochs_part(Loop&);        // epochs_part.cpp: --epochs
std::unique_ptr<LoopPart> memory_log_part(Loop&);    // memory_log.cpp: --memory-log
std::unique_ptr<LoopPart> save_part(Loop&);          // save_part.cpp: --save
std::unique_ptr<LoopPart> stop_part(Loop&);          // stop_part.cpp: signals, a failed output, the ranks' vote

LoopParts loop_parts(Loop& loop) {
  LoopParts parts;
  for (auto make : {host_work_part, book_lines_part, step_graph_part, check_finite_part, live_status_part,
                    epochs_part, memory_log_part, save_part, stop_part})
    if (std::unique_ptr<LoopPart> p = make(loop)) parts.push_back(std::move(p));
  return parts;
}

void Loop::print(const std::string& line) {
  if (before_print) before_print();
  out << line << std::endl;
}

}  // namespace amlp::train
