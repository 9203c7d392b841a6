// When the loop stops early: a signal (train/runs/interrupt.h), or an
// output that failed (a closed pipe on stdout: the run then fails once the
// queued batches finished). Across processes every rank stops after the
// same batch: a stop on any rank is voted on, and acted on a few batches
// later by all; a signal that came to any rank once every batch was queued
// interrupts the run on every rank too.
#include <csignal>

#include "framework/asyncmlp.h"
#include "train/runs/checked_output.h"
#include "train/runs/distributed_run.h"
#include "train/runs/interrupt.h"
#include "train/runs/loop.h"

namespace amlp::train {

namespace {

class StopPart : public LoopPart {
 public:
  explicit StopPart(Loop& loop) : loop_(loop) {}
  bool stop(const Batch&) override {
    const bool here = interrupt_signal() != 0 || !output_problem(loop_.out).empty();
    const bool stop = loop_.group ? loop_.group->agree_to_stop(here) : here;  // every rank votes every batch
    if (stop && !here) note_interrupt(SIGINT);  // another rank's
    return stop;
  }
  void finish() override {
    if (loop_.group && any_rank(*loop_.group, interrupt_signal() != 0) && !interrupt_signal()) note_interrupt(SIGINT);
  }

 private:
  Loop& loop_;
};

}  // namespace

std::unique_ptr<LoopPart> stop_part(Loop& loop) { return std::make_unique<StopPart>(loop); }

}  // namespace amlp::train
