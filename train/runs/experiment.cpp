#include "train/runs/experiment.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <ostream>
#include <utility>

#include "framework/asyncmlp.h"
#include "framework/scoped_settings.h"
#include "train/predict/predict.h"
#include "train/plan/parameters_file.h"
#include "train/runs/checked_output.h"
#include "train/runs/data_set.h"
#include "train/runs/distributed_run.h"
#include "train/runs/interrupt.h"
#include "train/runs/loop.h"
#include "train/runs/run_meter.h"
#include "train/runs/trainer.h"

namespace amlp::train {

void fresh_device(Device d) {
  waitall();
  empty_cache(d);
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
  reset_peaks(d);
}

namespace {

// "cpu:0,cpu:1"
std::string device_list(const std::vector<Device>& ds) {
  std::string t;
  for (const Device& d : ds) t += (t.empty() ? "" : ",") + d.str();
  return t;
}

// The result before the run: its spec, its devices and the sizes the models
// take from the shapes.
RunResult new_result(const RunSpec& s, const std::vector<Device>& devs) {
  RunResult r;
  r.asked = s;
  r.measured.device = device_list(devs);
  r.measured.final_loss = std::numeric_limits<double>::quiet_NaN();
  int64_t widest = s.options.features;
  for (int64_t h : s.options.hidden.hidden) widest = std::max(widest, h);
  const auto block = [](int64_t floats) { return pool_block_bytes(static_cast<size_t>(floats) * sizeof(float)); };
  const int64_t rows = local_batch_rows(s.options);  // this rank's, across processes
  r.measured.largest_tensor_bytes = block(rows * widest);
  r.measured.data_bytes_per_batch = block(rows * s.options.features) + block(rows);
  for (const Device& d : devs) {
    r.measured.per_device.push_back(DeviceResult{});
    r.measured.per_device.back().device = d.str();
  }
  return r;
}

// The model on clean devices, its weights drawn from the run's seed (the
// same weights and data in every mode, on one device or several); the
// device's budget and each replica's rows noted in `r`.
std::unique_ptr<Trainer> new_trainer(const RunSpec& s, const std::vector<Device>& devs, RunResult& r) {
  const MemoryBudget limit = memory_limit(devs[0]);
  r.measured.memory_limit_bytes = limit.bytes;
  r.measured.memory_limit_source = limit.bytes ? limit.source : "none";
  for (const Device& dev : devs) fresh_device(dev);
  manual_seed(s.options.seed);
  auto trainer = std::make_unique<Trainer>(s.options, devs);
  if (!s.options.load.empty())
    trainer->load(s.options.load, loaded_parameters(s.options.load));  // read and checked up front
  const std::vector<int64_t> rows = trainer->rows(s.options.batch_size);
  for (size_t i = 0; i < devs.size(); ++i) r.measured.per_device[i].rows_per_batch = rows[i];
  for (const Device& dev : devs) fresh_device(dev);
  return trainer;
}

// Where the loop was when a run failed: before its first batch, at a batch,
// in the final waitall() or in what a part was doing after it.
std::string failure_place(const RunSpec& s, const Batch& b, bool in_loop, const char* doing) {
  if (doing) return doing;
  if (!in_loop) return b.number == 0 ? "before its first batch" : "in the final waitall()";
  return "at batch " + std::to_string(b.number) + " of " + std::to_string(s.options.total_batches()) +
         (s.options.epochs > 1 ? " (epoch " + std::to_string(b.epoch) + ")" : std::string());
}

// The one line a failed run reports: where it failed, what, and for out of
// memory how to avoid it.
std::string failure_message(const RunSpec& s, const RunResult& r, const RunMeter& meter, const std::exception& e,
                            const std::string& where, int batch) {
  std::string what = dynamic_cast<const std::bad_alloc*>(&e) ? "the host ran out of memory (std::bad_alloc)"
                                                               : std::string(e.what());
  if (auto* k = dynamic_cast<const KernelError*>(&e))  // the batch that queued the op
    if (int b = meter.batch_of(k->device, k->seq); b && b != batch)
      what += " (op #" + std::to_string(k->seq) + " was queued in batch " + std::to_string(b) + ")";
  if (const auto* oom = dynamic_cast<const OutOfMemory*>(&e)) {
    // The limit that bound, named as it is raised: --memory-limit's (or the
    // host's budget it replaces), the address space's (ulimit -v, which the
    // budget then came from), or none (the device's own memory).
    const bool address_space = oom->limit_source.find("(ulimit -") != std::string::npos;
    const std::string raise = !oom->limit      ? ""
                              : address_space ? ", or raise the address-space limit it names"
                                              : ", or raise --memory-limit";
    if (r.measured.peak_backlog_batches <= 1)
      what += "; one batch alone does not fit: use a smaller --batch-size or --hidden" + raise;
    else
      what += "; the queued batches outgrew it: bound them with --max-pending-bytes, synchronize with --sync "
              "every=K, or use a smaller --batch-size" + raise;
  }
  return "run '" + s.label + "' failed " + where + ": " + what;
}

// Ends a failed run: drops what is still queued (nothing queued after the
// failure is worth minutes of work), waits only for the op running now,
// measures what the run did and throws it.
[[noreturn]] void throw_failed(RunResult& r, RunMeter& meter, double wall_s) {
  drop_pending();
  try {  // across processes a reduction in flight may wait for a rank that stopped: not waited for
    if (!rank_group(r.asked.options)) waitall();
  } catch (const std::exception&) {  // the error reported is the run's own
  }
  meter.finish(wall_s);
  r.measured.end_bytes = meter.bytes_in_use();
  r.measured.status = RunStatus::Failed;
  throw RunFailed(r.measured.error, r);
}

// The book's lines: "batch 50, time 1.2345 sec" at every 50th batch of an
// epoch and at its last (the book's 50 and 100 in a run of 100; runs of fewer
// than 100 batches: at the halfway point and at the end), the time since the
// loop started, once such a batch's data is queued; the run ends with "increased
// memory" (check_finished).
class BookLinesPart : public LoopPart {
 public:
  explicit BookLinesPart(Loop& loop) : loop_(loop) {}
  void begin_step(Batch& b) override {
    const int batches = loop_.spec.options.batches;
    const bool at = batches >= 100 ? b.in_epoch % 50 == 0 || b.in_epoch == batches
                                   : b.in_epoch == batches || (batches >= 2 && b.in_epoch == batches / 2);
    if (!at) return;
    char line[64];
    std::snprintf(line, sizeof line, "batch %d, time %.4f sec", b.in_epoch, loop_.meter.seconds());
    loop_.print(line);
  }

 private:
  Loop& loop_;
};

// A batch's data on the first device: --data's rows (this rank's, across
// processes), else X ~ N(0, 1) (B, F) and y = ones (B) drawn by queued ops;
// with --data-queue on its data queue (a loader stream), which the training
// ops wait on.
std::pair<Tensor, Tensor> draw(Loop& loop, std::optional<DataSet>& data, Batch& b) {
  const RunSpec& s = loop.spec;
  const Device d = loop.devices[0];
  if (data && b.in_epoch == 1) data->begin_epoch(b.epoch);
  std::optional<DataQueueGuard> loader;
  if (s.options.data_queue) loader.emplace(d);
  b.rows = data ? data->batch_rows(b.in_epoch - 1, s.options.batch_size) : s.options.batch_size;
  if (!data) return loop.trainer.draw_batch(s.options.batch_size, s.options.features, d);
  const auto [first, count] = loop.trainer.local_slice(b.rows);
  return data->batch(b.in_epoch - 1, s.options.batch_size, d, first, count);
}

// The book's run 1 reads the loss after every batch (a blocking item()); with
// --epochs every mode also reads each epoch's last, as a real loop's epoch
// ends (`none` waits for its backlog there, as at the book's waitall).
void read_loss(Loop& loop, Batch& b) {
  b.reading = true;
  const double w0 = loop.meter.seconds();
  b.row.loss = loop.trainer.mean_loss(b.losses, b.rows).item();
  b.waited_s = loop.meter.seconds() - w0;
  loop.meter.waited(b.waited_s);
  b.reading = false;
  loop.result.measured.final_loss = *b.row.loss;
  if (loop.result.measured.losses.size() < RunMeasurement::kMaxLossesKept)
    loop.result.measured.losses.emplace_back(b.number, *b.row.loss);
}

template <typename Hook>
void each(LoopParts& parts, Hook hook, Batch& b) {
  for (auto& p : parts) ((*p).*hook)(b);
}

// The batches, until the last or until a part stops the loop; `b` is the
// batch in hand (the last one queued, once it returns).
void run_batches(Loop& loop, LoopParts& parts, Batch& b) {
  const RunSpec& s = loop.spec;
  std::optional<DataSet> data;  // --data: the file's rows; else random batches
  if (!s.options.data.empty()) data.emplace(s.options);
  for (int n = 1; n <= s.options.total_batches(); ++n) {
    b = Batch{};
    b.number = n;
    b.epoch = (n - 1) / s.options.batches + 1;
    b.in_epoch = (n - 1) % s.options.batches + 1;
    b.epoch_ends = s.options.epochs > 1 && b.in_epoch == s.options.batches;
    trace::Scope batch_span("batch");
    each(parts, &LoopPart::prepare, b);
    loop.meter.before_batch();
    each(parts, &LoopPart::begin_batch, b);
    const auto [X, y] = draw(loop, data, b);
    each(parts, &LoopPart::begin_step, b);
    b.losses = loop.trainer.forward_backward(X, y);  // the batch's step: forward, backward, update
    loop.trainer.step(b.rows);
    each(parts, &LoopPart::end_step, b);
    loop.meter.after_step();
    each(parts, &LoopPart::queued, b);
    b.row = loop.meter.after_queue(n);
    if (s.options.epochs > 1) b.row.epoch = b.epoch;
    if (s.options.sync.syncs_after(n) || b.epoch_ends) read_loss(loop, b);
    each(parts, &LoopPart::after_batch, b);
    loop.result.measured.batches_done = n;
    bool stop = false;
    for (auto& p : parts) stop = p->stop(b) || stop;  // every part asked: a vote across ranks is collective
    if (stop && n < s.options.total_batches()) {      // queue nothing more; what is queued finishes
      loop.result.measured.interrupt_signal = interrupt_signal();
      return;
    }
  }
}

// The end of a run that did not fail: the queued batches waited for, the
// figures taken, the last batch's loss read if the loop did not, the parts'
// own ends (--save), and an interrupt noted.
void finish_run(Loop& loop, LoopParts& parts, Batch& b) {
  loop.meter.loop_ended();
  waitall();
  loop.meter.finish(loop.meter.seconds());
  if (b.number && !b.row.loss) loop.result.measured.final_loss = loop.trainer.mean_loss(b.losses, b.rows).item();
  b.losses.clear();
  // A run whose final loss is not finite diverged and fails (check_finished):
  // the parts' ends are for a run that trained, so --save writes nothing (a
  // file it would replace, the --load file among them, keeps what it held).
  if (std::isfinite(loop.result.measured.final_loss))
    for (auto& p : parts) p->finish();
  RunResult& r = loop.result;
  r.measured.end_bytes = loop.meter.bytes_in_use();
  // A signal that came once every batch was queued (the final waitall)
  // interrupted the run too: nothing was left to stop, but it was asked.
  if (!r.measured.interrupt_signal) r.measured.interrupt_signal = interrupt_signal();
  if (r.measured.interrupt_signal) r.measured.status = RunStatus::Interrupted;
}

// A run that finished: failed if it diverged (its final loss NaN or
// infinite, also where a signal interrupted it: nothing was saved) or if
// stdout could not take its lines (its queued batches finished: nothing is
// dropped, what it measured kept); else its last line.
void check_finished(const RunSpec& s, RunResult& r, std::ostream& out) {
  if (r.measured.status != RunStatus::Failed && !std::isfinite(r.measured.final_loss)) {
    char lr[32], loss[32];
    std::snprintf(lr, sizeof lr, "%g", static_cast<double>(s.options.lr));
    std::snprintf(loss, sizeof loss, "%g", r.measured.final_loss);
    r.measured.error = "run '" + s.label + "' diverged: its final loss is " + loss + " after " +
                       std::to_string(r.measured.batches_done) + " batches; use a smaller --lr (" + lr +
                       " now), or --check-finite to stop at the first batch whose loss "
                       "is not finite" +
                       (s.options.save.empty() ? "" : "; its parameters were not saved (--save)");
    r.measured.status = RunStatus::Failed;
    throw RunFailed(r.measured.error, r);
  }
  char line[128];
  std::snprintf(line, sizeof line, "increased memory: %.1f MB (tracked; RSS +%.1f MB)",
                r.measured.mem_increase_bytes / 1e6, r.measured.rss_increase_bytes / 1e6);
  out << line << std::endl;
  if (const std::string why = output_problem(out); !why.empty()) {
    r.measured.status = RunStatus::Failed;
    r.measured.error = "run '" + s.label + "' failed at batch " + std::to_string(r.measured.batches_done) + " of " +
                       std::to_string(s.options.total_batches()) + ": " + why;
    throw RunFailed(r.measured.error, r);
  }
}

}  // namespace

std::unique_ptr<LoopPart> book_lines_part(Loop& loop) { return std::make_unique<BookLinesPart>(loop); }

RunResult run_experiment(const RunSpec& s, std::ostream& out) {
  const std::vector<Device> devs = run_devices(s.options);
  RunResult r = new_result(s, devs);
  const ScopedAllocPolicy policy(s.options.alloc);
  const BlasThreadsShare blas(devs);  // the replicas' GEMMs share the cores
  r.measured.blas_threads = r.data_parallel() ? blas_threads() : 0;
  RunMeter meter(r, devs);
  Batch b;            // the batch in hand (number 0: before the first)
  std::string where;  // where it failed, for the one line
  trace::set_run_label(s.label);  // --compare's modes share the tracks: each span says whose it is
  try {
    const std::unique_ptr<Trainer> trainer = new_trainer(s, devs, r);
    dist::ProcessGroup* group = rank_group(s.options);
    if (group) {  // collective: the all-reduce's cost, for the throughput model
      const CommCost c = comm_cost(*group);
      r.measured.comm_alpha_s = c.alpha_s;
      r.measured.comm_beta_s_per_byte = c.beta_s_per_byte;
    }
    const ScopedMaxPending pending_limit(s.options.max_pending_ops, s.options.max_pending_bytes);
    const std::string run_name = "run " + s.label;
    trace::Scope run_span(run_name.c_str());
    meter.start();
    Loop loop(s, devs, r, meter, *trainer, group, out);
    bool in_loop = false;
    LoopParts parts;
    try {
      parts = loop_parts(loop);
      in_loop = true;
      run_batches(loop, parts, b);
      in_loop = false;
      finish_run(loop, parts, b);
    } catch (const std::exception&) {
      where = failure_place(s, b, in_loop, loop.doing);
      for (auto& p : parts) try {
          p->failed(b.number ? &b : nullptr);
        } catch (const std::exception&) {  // a part's own failure is not this run's error
        }
      throw;
    }
  } catch (const std::exception& e) {
    const double wall_s = meter.seconds();
    r.measured.error = failure_message(s, r, meter, e, where.empty() ? "before its first batch" : where, b.number);
    throw_failed(r, meter, wall_s);
  }
  check_finished(s, r, out);
  return r;
}

}  // namespace amlp::train
