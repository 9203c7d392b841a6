// loop.h — the training loop's features as parts. run_experiment
// (experiment.cpp) is the book's loop: draw a batch, queue its step, read its
// loss when the run synchronizes. Everything else a run can do — host work,
// step graphs, the book's time lines, --check-finite, the live status,
// --epochs, the memory log, the ranks' stop vote, --save — is a LoopPart
// that acts at the loop's points, each in the file of its feature;
// loop_parts.cpp registers them, in the order they act.
//
//   for each batch b:
//     part.prepare(b)       before anything of the batch (host work, the epoch's data)
//     meter.before_batch()  the backlog sampled
//     part.begin_batch(b)   its buffers' source chosen (graph slots)
//     draw b's data
//     part.begin_step(b)    the data queued, the step not yet (the book's time line; graph capture)
//     queue the step        forward, backward, update
//     part.end_step(b)      the step queued (graph replay)
//     part.queued(b)        every op of the batch queued (--check-finite's check)
//     b.row = meter.after_queue()
//     read the loss         when the run synchronizes after b
//     part.after_batch(b)   the batch's row complete (live status, epochs, the memory log)
//     part.stop(b)          any part may end the loop after b (interrupts, the ranks' vote)
//   part.finish()           every queued batch done, the final loss finite (--save)
//   part.failed(b)          the run failed in b (or after the loop: null)
#pragma once
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "framework/asyncmlp.h"
#include "train/plan/run_result.h"
#include "train/runs/memory_log.h"

namespace amlp::dist {
class ProcessGroup;
}

namespace amlp::train {

class RunMeter;
class Trainer;

// One batch as the loop goes through it.
struct Batch {
  int number = 0;    // 1-based, across epochs
  int epoch = 1;     // 1-based
  int in_epoch = 1;  // the batch's place in its epoch, 1-based
  int64_t rows = 0;  // the whole batch's rows (a kept last batch of --data may have fewer)
  std::vector<Tensor> losses;  // each replica's per-sample losses, queued
  BatchSample row;             // its memory-log row, once queued (the loss once read)
  bool reading = false;        // its loss is being read (a failure now leaves the row, loss empty)
  double waited_s = 0;         // seconds the loop blocked reading its loss
  bool epoch_ends = false;     // the last batch of an epoch of --epochs
};

// What the parts share: the run, its measurement and its output.
struct Loop {
  Loop(const RunSpec& s, const std::vector<Device>& d, RunResult& r, RunMeter& m, Trainer& t, dist::ProcessGroup* g,
       std::ostream& o)
      : spec(s), devices(d), result(r), meter(m), trainer(t), group(g), out(o) {}
  const RunSpec& spec;
  const std::vector<Device>& devices;
  RunResult& result;
  RunMeter& meter;
  Trainer& trainer;
  dist::ProcessGroup* group;  // across processes; null in one
  std::ostream& out;
  // A line of the run's output: the live status line (a part's) is cleared first.
  void print(const std::string& line);
  // Set by the live status part: clears its line before print() writes.
  std::function<void()> before_print;
  // What a part is doing outside the batches, for a failure's one line ("saving its parameters").
  const char* doing = nullptr;
};

class LoopPart {
 public:
  virtual ~LoopPart() = default;
  virtual void prepare(Batch&) {}
  virtual void begin_batch(Batch&) {}
  virtual void begin_step(Batch&) {}
  virtual void end_step(Batch&) {}
  virtual void queued(Batch&) {}
  virtual void after_batch(Batch&) {}
  virtual bool stop(const Batch&) { return false; }
  virtual void finish() {}
  // The run failed in `b` (null: outside a batch); the part's own failure
  // here is not the run's error, and is ignored.
  virtual void failed(const Batch*) {}
};

using LoopParts = std::vector<std::unique_ptr<LoopPart>>;

// The parts this run's spec asks for, in the order they act (loop_parts.cpp).
LoopParts loop_parts(Loop& loop);

}  // namespace amlp::train
