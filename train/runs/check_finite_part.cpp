// --check-finite: each batch's loss checked on its device once it is
// queued; the first that is not finite fails the run at the next blocker.
#include "framework/asyncmlp.h"
#include "train/runs/loop.h"

namespace amlp::train {

namespace {

class CheckFinitePart : public LoopPart {
 public:
  void queued(Batch& b) override {
    for (const Tensor& l : b.losses) check_finite(l, "loss");
  }
};

}  // namespace

std::unique_ptr<LoopPart> check_finite_part(Loop& loop) {
  if (!loop.spec.options.check_finite) return nullptr;
  return std::make_unique<CheckFinitePart>();
}

}  // namespace amlp::train
