// step_graph.h — recognising a queue's steady step, for graph replay.
//
// A training loop pushes the same ops every batch: same names, same shapes,
// and (its batches' buffers taken from the graph slots' step memory,
// step_memory.h) the same buffers two batches apart. A backend that
// can record a stream's launches as one graph (CUDA graphs) then launches a
// whole batch with one call instead of one per op. This file decides *when*;
// it knows nothing of any device, so it is tested against CPU op sequences.
//
// The frontend reports each op of a step (op()) and the step's end
// (end_step()). The recogniser learns in eager steps: once `warmup` steps in
// a row matched the one before them (the same op names and buffer sizes in
// the same order, every op recordable as it declared), it arms. In an armed step every matching op is *held*
// (op() returns true): the backend launches none of them yet. At the step's
// end the verdict says what to do with the held ops:
//
//   Capture  — record them into a graph in a free slot, then launch it
//   Replay   — a slot's graph recorded them already (the same addresses and
//              scalar arguments): launch it, nothing else
//   Update   — same ops and shapes, but no slot has their addresses and
//              scalars: record them again into the least recently used slot
//              and update its graph in place (cudaGraphExecUpdate), then launch
//   Eager    — run them one by one as usual (nothing was held, or the step
//              stopped matching; every graph is dropped)
//
// Two slots: a loop whose batches alternate between two sets of blocks (the
// next batch's tensors are made while the last one's are still alive) replays
// both. slot() names the last verdict's.
//
// A mismatch in the middle of an armed step ends holding at once: op() turns
// false for it and the rest, and the backend runs the held ops eagerly before
// the mismatching one (stream order is kept). interrupt() does the same from
// outside: a blocker inside the step, an error, synchronous mode.
//
//   StepRecogniser r(/*warmup=*/1);
//   for (each batch) { for (each op) held = r.op(sig); verdict = r.end_step(); }
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/core/op/op_traits.h"
#include "framework/stats.h"

namespace amlp {

// One op as the recogniser sees it.
struct OpSignature {
  std::string name;
  std::vector<size_t> bytes;           // each declared buffer's size, reads then writes (0: undefined)
  std::vector<const void*> addresses;  // each buffer's address (nullptr: no block yet)
  std::vector<uint64_t> scalars;       // the kernel's other arguments (a draw's seed and offset, lr)
  OpTraits traits;                     // as the op declared them (op_traits.h)
  bool payload = false;                // it carries a payload, which cannot be compared (op.h OpPayload)
  bool recordable() const { return traits.recordable && !traits.waits_for_host && !payload; }
};

enum class StepVerdict { Eager, Capture, Replay, Update };
const char* to_string(StepVerdict v);

class StepRecogniser {
 public:
  explicit StepRecogniser(int warmup = 1) : warmup_(warmup < 1 ? 1 : warmup) {}

  // An op pushed inside the current step; true: hold it for the verdict.
  bool op(const OpSignature& sig);
  // The current step ended: what to do with its held ops.
  StepVerdict end_step();
  // Stop holding in this step and drop the graph (a blocker waits inside the
  // step, an op failed, synchronous mode). The held ops run eagerly.
  void interrupt(const std::string& reason);
  // True while ops of this step are held (the backend must not run them yet).
  bool holding() const { return holding_; }
  bool has_graph() const { return slots_[0].has_graph || slots_[1].has_graph; }
  int slot() const { return slot_; }  // the last Capture / Update / Replay verdict's graph
  static constexpr int kSlots = 2;
  const StepGraphStats& stats() const { return stats_; }

 private:
  enum class Match { Same, OtherArguments, Different };
  static Match compare(const OpSignature& a, const OpSignature& b);
  void give_up(const std::string& reason);  // drops the graphs, back to learning
  struct Slot {
    bool has_graph = false;
    uint64_t used = 0;  // when its graph was last launched (LRU)
    std::vector<std::pair<std::vector<const void*>, std::vector<uint64_t>>> args;  // per op
  };
  bool same_args(const Slot& s) const;  // current_ has the slot's addresses and scalars

  int warmup_;
  std::vector<OpSignature> reference_;  // the last step learned (armed: the one to match)
  std::vector<OpSignature> current_;    // this step's ops so far
  int steady_ = 0;                      // eager steps in a row that matched their predecessor
  bool all_recordable_ = true;          // this step so far
  bool current_matches_ = true;         // this step so far has reference_'s ops and sizes
  bool armed_ = false;                  // this step's ops are held while they match
  bool holding_ = false;                // armed and no mismatch yet
  Slot slots_[kSlots];
  int slot_ = 0;
  uint64_t tick_ = 0;
  StepGraphStats stats_;
};

}  // namespace amlp
