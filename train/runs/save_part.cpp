// --save: the parameters written once the queued batches have run (also
// when the run was interrupted), rank 0's across processes.
#include "framework/asyncmlp.h"
#include "framework/parse.h"
#include "train/runs/loop.h"
#include "train/runs/trainer.h"

namespace amlp::train {

namespace {

class SavePart : public LoopPart {
 public:
  explicit SavePart(Loop& loop) : loop_(loop) {}
  void finish() override {
    loop_.doing = "saving its parameters";
    try {
      loop_.trainer.save(loop_.spec.options.save);
    } catch (const KernelError&) {  // the training's own failure, met as the values were waited for
      throw;
    } catch (const OutOfMemory&) {
      throw;
    } catch (const Error& e) {  // the option is named: "cannot write 'p.st'" alone does not say which
      throw Error(std::string("--save: ") + e.what());
    }
    loop_.doing = nullptr;
    loop_.print("parameters saved: " + quote(loop_.spec.options.save));
  }

 private:
  Loop& loop_;
};

}  // namespace

std::unique_ptr<LoopPart> save_part(Loop& loop) {
  if (loop.spec.options.save.empty()) return nullptr;
  return std::make_unique<SavePart>(loop);
}

}  // namespace amlp::train
