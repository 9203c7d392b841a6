// --epochs E > 1: each epoch's figures as it runs (what the pools held and
// had backed as it began, the rows' peaks since, the throughput model's h
// and d over the epoch alone) and the line each epoch ends with.
#include <algorithm>
#include <cstdio>

#include "framework/asyncmlp.h"
#include "train/predict/predict.h"
#include "train/runs/loop.h"
#include "train/runs/run_meter.h"

namespace amlp::train {

namespace {

class EpochsPart : public LoopPart {
 public:
  explicit EpochsPart(Loop& loop) : loop_(loop) { begin(1); }
  void after_batch(Batch& b) override {
    waited_s_ += b.waited_s;
    ++e_.batches;
    samples_ += b.rows;
    const BatchSample& row = b.row;
    peak_in_use_ = e_.batches == 1 ? row.bytes_in_use : std::max(peak_in_use_, row.bytes_in_use);
    e_.peak_reserved_bytes = std::max(e_.peak_reserved_bytes, row.reserved_bytes);
    e_.peak_backlog_batches = std::max(e_.peak_backlog_batches, row.backlog_batches);
    if (!b.epoch_ends) return;
    const RunSpec& s = loop_.spec;
    loop_.result.measured.epochs.push_back(end(
        *row.loss,
        model_every(s.options.sync, s.options.batches, s.options.max_pending_bytes, loop_.meter.bytes_per_batch())));
    print(loop_.result.measured.epochs.back());
    if (b.epoch < s.options.epochs) begin(b.epoch + 1);
  }

 private:
  void begin(int epoch) {
    e_ = EpochResult{};
    e_.epoch = epoch;
    samples_ = 0;
    waited_s_ = 0;
    t0_ = loop_.meter.seconds();
    in_use0_ = loop_.meter.bytes_in_use();
    fresh0_ = fresh();
    queues0_ = queues();
  }
  // `every`: the run's sync interval in the throughput model (its epochs' last loss read too).
  EpochResult end(double loss, int every) {
    e_.wall_s = loop_.meter.seconds() - t0_;
    e_.samples_per_s = e_.wall_s > 0 ? double(samples_) / e_.wall_s : 0;
    e_.mem_increase_bytes = peak_in_use_ > in_use0_ ? peak_in_use_ - in_use0_ : 0;
    const FreshBacking f = fresh() - fresh0_;
    e_.fresh_bytes = f.bytes();
    e_.fresh_worker_s = f.worker_s;
    e_.loss = loss;
    // h and d over the epoch, as the run meter takes them over the run: the
    // loop's time less its waits (loss reads, back-pressure), the busiest
    // CPU queue's busy time; per batch.
    const std::vector<QueueStats> q = queues();
    double busy = 0, held = 0;
    bool cpu = true;
    for (size_t i = 0; i < q.size(); ++i) {
      cpu = cpu && !loop_.devices[i].is_cuda();
      busy = std::max(busy, q[i].busy_s - queues0_[i].busy_s);
      held += q[i].held_s - queues0_[i].held_s;
    }
    if (e_.batches > 0 && cpu) {
      e_.host_s_per_batch = std::max(0.0, e_.wall_s - waited_s_ - held) / e_.batches;
      e_.device_s_per_batch = busy / e_.batches;
      const double wall = predicted_wall_s(e_.batches, std::min(every, e_.batches), e_.host_s_per_batch, e_.device_s_per_batch);
      e_.predicted_samples_per_s = wall > 0 ? double(samples_) / wall : 0;
    }
    return e_;
  }
  void print(const EpochResult& e) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "epoch %d of %d: %d batches in %.4f sec, %.0f samples/s, loss %.6g, memory +%.1f MB "
                  "(reserved %.1f MB, fresh %.1f MB backed)",
                  e.epoch, loop_.spec.options.epochs, e.batches, e.wall_s, e.samples_per_s, e.loss,
                  e.mem_increase_bytes / 1e6, e.peak_reserved_bytes / 1e6, e.fresh_bytes / 1e6);
    loop_.print(line);
  }
  FreshBacking fresh() const {  // the devices' fresh-memory counters, summed
    FreshBacking sum;
    for (const Device& d : loop_.devices) sum += memory_stats(d).fresh;
    return sum;
  }
  std::vector<QueueStats> queues() const {
    std::vector<QueueStats> q;
    for (const Device& d : loop_.devices) q.push_back(queue_stats(d));
    return q;
  }

  Loop& loop_;
  std::vector<QueueStats> queues0_;
  double waited_s_ = 0;
  EpochResult e_;
  double t0_ = 0;
  size_t in_use0_ = 0, peak_in_use_ = 0;
  int64_t samples_ = 0;
  FreshBacking fresh0_;
};

}  // namespace

std::unique_ptr<LoopPart> epochs_part(Loop& loop) {
  if (loop.spec.options.epochs <= 1) return nullptr;
  return std::make_unique<EpochsPart>(loop);
}

}  // namespace amlp::train
