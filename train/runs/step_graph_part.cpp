// --graph on: each batch's step (forward, backward, update) recorded once
// and replayed after (framework/runtime.h begin_step); its buffers, its
// data's included, are the graph slots' (begin_step_memory), so a steady
// step gets the addresses its graph was recorded with. The data's draw
// stays out of the step: its Philox offset moves every batch, which a
// replayed graph would repeat.
#include <optional>

#include "framework/asyncmlp.h"
#include "framework/scoped_settings.h"
#include "train/runs/loop.h"

namespace amlp::train {

namespace {

class StepGraphPart : public LoopPart {
 public:
  explicit StepGraphPart(Loop& loop) : devices_(loop.devices), graphs_(loop.devices, loop.result.measured.graph) {}
  void begin_batch(Batch&) override { memory_.emplace(devices_); }
  void begin_step(Batch&) override {
    for (const Device& d : devices_) amlp::begin_step(d);
  }
  void end_step(Batch&) override {
    for (const Device& d : devices_) amlp::end_step(d);
    memory_.reset();
  }

 private:
  std::vector<Device> devices_;
  ScopedStepGraph graphs_;
  std::optional<ScopedStepMemory> memory_;  // the batch's, from its start to its step's end
};

}  // namespace

std::unique_ptr<LoopPart> step_graph_part(Loop& loop) {
  if (!loop.spec.options.graph) return nullptr;
  return std::make_unique<StepGraphPart>(loop);
}

}  // namespace amlp::train
