// --host-work: the input pipeline's work for each batch, done by the loop
// before any of the batch's ops is queued (train/options/host_work.h).
#include "framework/asyncmlp.h"
#include "train/options/host_work.h"
#include "train/runs/interrupt.h"
#include "train/runs/loop.h"

namespace amlp::train {

namespace {

class HostWorkPart : public LoopPart {
 public:
  explicit HostWorkPart(const HostWork& w) : work_(w) {}
  void prepare(Batch&) override {
    trace::Scope host_span("host work");
    do_host_work(work_, &interrupt_flag());  // a signal cuts it short; the batch is still queued
  }

 private:
  HostWork work_;
};

}  // namespace

std::unique_ptr<LoopPart> host_work_part(Loop& loop) {
  if (!loop.spec.options.host_work.ns) return nullptr;
  return std::make_unique<HostWorkPart>(loop.spec.options.host_work);
}

}  // namespace amlp::train
