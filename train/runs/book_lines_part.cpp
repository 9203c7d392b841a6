// The book's lines: "batch 50, time 1.2345 sec" at batches 50 and 100 of
// each epoch (shorter runs: at the halfway point and at the end), the time
// since the loop started, as each such batch's data is drawn.
#include <cstdio>

#include "train/runs/loop.h"
#include "train/runs/run_meter.h"

namespace amlp::train {

namespace {

bool prints_time_at(int batch, int batches) {
  if (batches >= 100) return batch % 50 == 0 || batch == batches;
  return batch == batches || (batches >= 2 && batch == batches / 2);
}

class BookLinesPart : public LoopPart {
 public:
  explicit BookLinesPart(Loop& loop) : loop_(loop) {}
  void begin_step(Batch& b) override {
    if (!prints_time_at(b.in_epoch, loop_.spec.batches)) return;
    char line[64];
    std::snprintf(line, sizeof line, "batch %d, time %.4f sec", b.in_epoch, loop_.meter.seconds());
    loop_.print(line);
  }

 private:
  Loop& loop_;
};

}  // namespace

std::unique_ptr<LoopPart> book_lines_part(Loop& loop) { return std::make_unique<BookLinesPart>(loop); }

}  // namespace amlp::train
