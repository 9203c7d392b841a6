#include "train/runs/experiment.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <ostream>
#include <tuple>
#include <utility>

#include "framework/asyncmlp.h"
#include "framework/scoped_settings.h"
#include "train/runs/checked_output.h"
#include "train/runs/data_set.h"
#include "train/runs/distributed_run.h"
#include "framework/parse.h"
#include "train/runs/interrupt.h"
#include "train/runs/live_status.h"
#include "train/runs/memory_log.h"
#include "train/models/predict.h"
#include "train/plan/parameters_file.h"
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

// The book prints the time at batches 50 and 100; shorter runs print at the
// halfway point and at the end.
bool prints_time_at(int batch, int batches) {
  if (batches >= 100) return batch % 50 == 0 || batch == batches;
  return batch == batches || (batches >= 2 && batch == batches / 2);
}

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
  r.device = device_list(devs);
  r.final_loss = std::numeric_limits<double>::quiet_NaN();
  int64_t widest = s.features;
  for (int64_t h : s.hidden.hidden) widest = std::max(widest, h);
  const auto block = [](int64_t floats) { return pool_block_bytes(static_cast<size_t>(floats) * sizeof(float)); };
  const int64_t rows = local_batch_rows(s);  // this rank's, across processes
  r.largest_tensor_bytes = block(rows * widest);
  r.data_bytes_per_batch = block(rows * s.features) + block(rows);
  for (const Device& d : devs) {
    r.per_device.push_back(DeviceResult{});
    r.per_device.back().device = d.str();
  }
  return r;
}

// The model on clean devices, its weights drawn from the run's seed (the
// same weights and data in every mode, on one device or several); the
// device's budget and each replica's rows noted in `r`.
std::unique_ptr<Trainer> new_trainer(const RunSpec& s, const std::vector<Device>& devs, RunResult& r) {
  const MemoryBudget limit = memory_limit(devs[0]);
  r.memory_limit_bytes = limit.bytes;
  r.memory_limit_source = limit.bytes ? limit.source : "none";
  for (const Device& dev : devs) fresh_device(dev);
  manual_seed(s.seed);
  auto trainer = std::make_unique<Trainer>(s, devs);
  if (!s.load.empty()) trainer->load(s.load, loaded_parameters(s.load));  // read and checked up front
  const std::vector<int64_t> rows = trainer->rows(s.batch_size);
  for (size_t i = 0; i < devs.size(); ++i) r.per_device[i].rows_per_batch = rows[i];
  for (const Device& dev : devs) fresh_device(dev);
  return trainer;
}

// The one line a failed run reports: where it failed, what, and for out of
// memory how to avoid it.
std::string failure_message(const RunSpec& s, const RunResult& r, const RunMeter& meter, const std::exception& e,
                            int batch, bool in_loop, bool saving) {
  std::string what = dynamic_cast<const std::bad_alloc*>(&e) ? "the host ran out of memory (std::bad_alloc)"
                                                               : std::string(e.what());
  const int total = s.total_batches();
  const std::string where = saving     ? "saving its parameters"
                            : !in_loop ? (batch == 0 ? "before its first batch" : "in the final waitall()")
                            : batch <= total
                                ? "at batch " + std::to_string(batch) + " of " + std::to_string(total) +
                                      (s.epochs > 1 ? " (epoch " + std::to_string((batch - 1) / s.batches + 1) + ")"
                                                    : std::string())
                                : "in the final waitall()";
  if (auto* k = dynamic_cast<const KernelError*>(&e))  // the batch that queued the op
    if (int b = meter.batch_of(k->device, k->seq); b && b != batch)
      what += " (op #" + std::to_string(k->seq) + " was queued in batch " + std::to_string(b) + ")";
  if (dynamic_cast<const OutOfMemory*>(&e)) {
    if (r.peak_backlog_batches <= 1)
      what += "; one batch alone does not fit: use a smaller --batch-size or --hidden, or raise --memory-limit";
    else
      what += "; the queued batches outgrew it: bound them with --max-pending-bytes, synchronize with --sync "
              "every=K, use a smaller --batch-size, or raise --memory-limit";
  }
  return "run '" + s.label + "' failed " + where + ": " + what;
}

// Ends a failed run: drops what is still queued (nothing queued after the
// failure is worth minutes of work), waits only for the op running now,
// measures what the run did and throws it.
[[noreturn]] void throw_failed(RunResult& r, RunMeter& meter, double wall_s) {
  drop_pending();
  try {  // across processes a reduction in flight may wait for a rank that stopped: not waited for
    if (!rank_group(r.asked)) waitall();
  } catch (const std::exception&) {  // the error reported is the run's own
  }
  meter.finish(wall_s);
  r.end_bytes = meter.bytes_in_use();
  r.status = RunStatus::Failed;
  throw RunFailed(r.error, r);
}

void print_time(int batch, double s, std::ostream& out) {
  char line[64];
  std::snprintf(line, sizeof line, "batch %d, time %.4f sec", batch, s);
  out << line << std::endl;
}

// An epoch's figures as it runs: what the pools held and had backed as it
// began, the rows' peaks since.
class EpochMeter {
 public:
  explicit EpochMeter(const std::vector<Device>& devs) : devs_(devs) {}
  void begin(int epoch, double now_s, size_t in_use) {
    e_ = EpochResult{};
    e_.epoch = epoch;
    samples_ = 0;
    waited_s_ = 0;
    t0_ = now_s;
    in_use0_ = in_use;
    fresh0_ = fresh();
    queues0_ = queues();
  }
  // Seconds the loop spent blocked reading a loss in this epoch.
  void waited(double s) { waited_s_ += s; }
  void row(const BatchSample& b, int64_t rows) {
    ++e_.batches;
    samples_ += rows;
    peak_in_use_ = e_.batches == 1 ? b.bytes_in_use : std::max(peak_in_use_, b.bytes_in_use);
    e_.peak_reserved_bytes = std::max(e_.peak_reserved_bytes, b.reserved_bytes);
    e_.peak_backlog_batches = std::max(e_.peak_backlog_batches, b.backlog_batches);
  }
  // `every`: the run's sync interval in the throughput model (its epochs' last loss read too).
  EpochResult end(double now_s, double loss, int every) {
    e_.wall_s = now_s - t0_;
    e_.samples_per_s = e_.wall_s > 0 ? double(samples_) / e_.wall_s : 0;
    e_.mem_increase_bytes = peak_in_use_ > in_use0_ ? peak_in_use_ - in_use0_ : 0;
    const MemoryStats f = fresh();
    e_.fresh_bytes = (f.fresh_worker_bytes + f.fresh_populator_bytes) -
                     (fresh0_.fresh_worker_bytes + fresh0_.fresh_populator_bytes);
    e_.fresh_worker_s = f.fresh_worker_s - fresh0_.fresh_worker_s;
    e_.loss = loss;
    // h and d over the epoch, as the run meter takes them over the run: the
    // loop's time less its waits (loss reads, back-pressure), the busiest
    // CPU queue's busy time; per batch.
    const std::vector<QueueStats> q = queues();
    double busy = 0, held = 0;
    bool cpu = true;
    for (size_t i = 0; i < q.size(); ++i) {
      cpu = cpu && !devs_[i].is_cuda();
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

 private:
  MemoryStats fresh() const {  // the devices' fresh-memory counters, summed
    MemoryStats sum;
    for (const Device& d : devs_) {
      const MemoryStats m = memory_stats(d);
      sum.fresh_worker_bytes += m.fresh_worker_bytes;
      sum.fresh_populator_bytes += m.fresh_populator_bytes;
      sum.fresh_worker_s += m.fresh_worker_s;
    }
    return sum;
  }
  std::vector<QueueStats> queues() const {
    std::vector<QueueStats> q;
    for (const Device& d : devs_) q.push_back(queue_stats(d));
    return q;
  }
  std::vector<Device> devs_;
  std::vector<QueueStats> queues0_;
  double waited_s_ = 0;
  EpochResult e_;
  double t0_ = 0;
  size_t in_use0_ = 0, peak_in_use_ = 0;
  int64_t samples_ = 0;
  MemoryStats fresh0_;
};

// The line each epoch of a run with --epochs ends with.
void print_epoch(const EpochResult& e, int epochs, std::ostream& out) {
  char line[256];
  std::snprintf(line, sizeof line,
                "epoch %d of %d: %d batches in %.4f sec, %.0f samples/s, loss %.6g, memory +%.1f MB "
                "(reserved %.1f MB, fresh %.1f MB backed)",
                e.epoch, epochs, e.batches, e.wall_s, e.samples_per_s, e.loss, e.mem_increase_bytes / 1e6,
                e.peak_reserved_bytes / 1e6, e.fresh_bytes / 1e6);
  out << line << std::endl;
}

}  // namespace

RunResult run_experiment(const RunSpec& s, std::ostream& out) {
  const std::vector<Device> devs = run_devices(s);
  const Device d = devs[0];  // where the data is drawn (and the only device without --devices)
  const int64_t B = s.batch_size;
  RunResult r = new_result(s, devs);
  const ScopedAllocPolicy policy(s.alloc);
  const BlasThreadsShare blas(devs);  // the replicas' GEMMs share the cores
  r.blas_threads = r.data_parallel() ? blas_threads() : 0;
  RunMeter meter(r, devs);
  MemoryLog log;
  std::optional<BatchSample> unwritten;  // a batch's row, built, while its loss is read
  int batch = 0;
  bool in_loop = false;
  bool saving = false;  // --save's file being written
  trace::set_run_label(s.label);  // --compare's modes share the tracks: each span says whose it is
  try {
    const std::unique_ptr<Trainer> model = new_trainer(s, devs, r);
    Trainer& trainer = *model;
    dist::ProcessGroup* group = rank_group(s);
    if (group) {  // collective: the all-reduce's cost, for the throughput model
      const CommCost c = comm_cost(*group);
      r.comm_alpha_s = c.alpha_s;
      r.comm_beta_s_per_byte = c.beta_s_per_byte;
    }
    if (!s.memory_log.empty())
      log = MemoryLog(s.memory_log, r.data_parallel() ? devs : std::vector<Device>{}, s.epochs > 1);
    const ScopedMaxPending pending_limit(s.max_pending_ops, s.max_pending_bytes);
    const ScopedStepGraph graphs(s.graph ? devs : std::vector<Device>{}, r.graph);
    const std::string run_name = "run " + s.label;
    trace::Scope run_span(run_name.c_str());
    meter.start();
    LiveStatus live(s, devs, r.memory_limit_bytes, r.start_bytes);
    std::vector<Tensor> last_loss;  // the last batch's per-sample losses, for the final figure
    int64_t last_rows = B;          // and that batch's rows
    bool synced = false;
    const int total = s.total_batches();
    std::optional<DataSet> data;  // --data: the file's rows; else random batches
    if (!s.data.empty()) data.emplace(s);
    EpochMeter epoch_meter(devs);
    if (s.epochs > 1) epoch_meter.begin(1, meter.seconds(), meter.bytes_in_use());
    in_loop = true;
    for (batch = 1; batch <= total; ++batch) {
      const int in_epoch = (batch - 1) % s.batches + 1, epoch = (batch - 1) / s.batches + 1;
      if (data && in_epoch == 1) data->begin_epoch(epoch);
      trace::Scope batch_span("batch");
      if (s.host_work.ns) {  // the input pipeline's work for this batch, before any of its ops is queued
        trace::Scope host_span("host work");
        do_host_work(s.host_work, &interrupt_flag());  // a signal cuts it short; the batch is still queued
      }
      meter.before_batch();
      // With --graph on the batch's buffers, its data's included, are the
      // graph slots' (runtime.h begin_step_memory): a steady step gets the
      // addresses its graph was recorded with.
      ScopedStepMemory step_memory(s.graph ? devs : std::vector<Device>{});
      // The data iterator: X ~ N(0, 1) (B, F), y = ones (B), generated by
      // queued ops on the first device; with --data-queue on its data queue
      // (a loader stream), which the training ops below wait on.
      // Across processes each rank draws its rows of the one global batch.
      Tensor X, y;
      {
        std::optional<DataQueueGuard> loader;
        if (s.data_queue) loader.emplace(d);
        if (data) {  // distributed: this rank's rows of the batch
          const auto [first, count] = trainer.local_slice(data->batch_rows(in_epoch - 1, B));
          std::tie(X, y) = data->batch(in_epoch - 1, B, d, first, count);
        } else {
          std::tie(X, y) = trainer.draw_batch(B, s.features, d);
        }
      }
      if (prints_time_at(in_epoch, s.batches)) {
        live.clear();
        print_time(in_epoch, meter.seconds(), out);
      }
      // The batch's step: forward, backward, update. The data's draw stays
      // out of it: its Philox offset moves every batch, which a replayed
      // graph would repeat.
      if (s.graph)
        for (const Device& dev : devs) begin_step(dev);
      std::vector<Tensor> ls = trainer.forward_backward(X, y);
      // The whole batch's rows: B (a distributed X holds this rank's share), or a kept last batch's.
      const int64_t rows = data ? data->batch_rows(in_epoch - 1, B) : B;
      trainer.step(rows);
      if (s.graph)
        for (const Device& dev : devs) end_step(dev);
      step_memory.close();
      meter.after_step();
      if (s.check_finite)
        for (const Tensor& l : ls) check_finite(l, "loss");
      BatchSample row = meter.after_queue(batch);
      if (s.epochs > 1) row.epoch = epoch;
      live.batch_queued(batch, meter.last_queued_seq(), meter.bytes_per_batch());
      // The book's run 1 reads the loss after every batch (a blocking
      // item()); with --epochs every mode also reads each epoch's last, as a
      // real loop's epoch ends (`none` waits for its backlog there, as at the
      // book's waitall).
      const bool epoch_ends = s.epochs > 1 && in_epoch == s.batches;
      synced = s.sync.syncs_after(batch) || epoch_ends;
      if (synced) {
        unwritten = row;  // a failure while reading still leaves the batch's row (loss empty)
        const double w0 = meter.seconds();
        row.loss = trainer.mean_loss(ls, rows).item();
        meter.waited(meter.seconds() - w0);
        epoch_meter.waited(meter.seconds() - w0);
        r.final_loss = *row.loss;
        if (r.losses.size() < RunResult::kMaxLossesKept) r.losses.emplace_back(batch, *row.loss);
        unwritten.reset();
      }
      if (s.epochs > 1) epoch_meter.row(row, rows);
      if (epoch_ends) {
        r.epochs.push_back(epoch_meter.end(
            meter.seconds(), *row.loss,
            model_every(s.sync, s.batches, s.max_pending_bytes, meter.bytes_per_batch())));
        live.clear();
        print_epoch(r.epochs.back(), s.epochs, out);
        if (epoch < s.epochs) epoch_meter.begin(epoch + 1, meter.seconds(), meter.bytes_in_use());
      }
      log.write(row);
      r.batches_done = batch;
      // Across processes every rank stops after the same batch: an interrupt
      // on any rank is voted on, and acted on a few batches later by all.
      // An output that failed (a closed pipe on stdout) stops the loop alike;
      // the run then fails, below, once the queued batches finished.
      const bool out_failed = !output_problem(out).empty();
      const bool stop_here = interrupt_signal() != 0 || out_failed;
      const bool stop = group ? group->agree_to_stop(stop_here) : stop_here;
      if (stop && !stop_here) note_interrupt(SIGINT);  // another rank's
      if (batch == total) {
        last_loss = ls;
        last_rows = rows;
      } else if (stop) {  // queue nothing more; what is queued finishes
        r.interrupt_signal = interrupt_signal();
        last_loss = ls;
        last_rows = rows;
        break;
      }
    }
    in_loop = false;
    meter.loop_ended();
    waitall();
    meter.finish(meter.seconds());
    if (!synced && !last_loss.empty()) r.final_loss = trainer.mean_loss(last_loss, last_rows).item();
    last_loss.clear();
    if (!s.save.empty()) {  // also when interrupted: the batches queued before the signal have run
      saving = true;
      try {
        trainer.save(s.save);
      } catch (const KernelError&) {  // the training's own failure, met as the values were waited for
        throw;
      } catch (const OutOfMemory&) {
        throw;
      } catch (const Error& e) {  // the option is named: "cannot write 'p.st'" alone does not say which
        throw Error(std::string("--save: ") + e.what());
      }
      saving = false;
      out << "parameters saved: " << quote(s.save) << std::endl;
    }
    r.end_bytes = meter.bytes_in_use();
    // A signal that came once every batch was queued (the final waitall)
    // interrupted the run too: nothing was left to stop, but it was asked.
    // Across processes: on every rank once it came to any (the next run, the exit status alike).
    if (group && any_rank(*group, interrupt_signal() != 0) && !interrupt_signal()) note_interrupt(SIGINT);
    if (!r.interrupt_signal) r.interrupt_signal = interrupt_signal();
    if (r.interrupt_signal) r.status = RunStatus::Interrupted;
  } catch (const std::exception& e) {
    const double wall_s = meter.seconds();
    try {
      if (unwritten) log.write(*std::exchange(unwritten, std::nullopt));  // the batch's row, loss empty
    } catch (const std::exception&) {  // the log's own failure is not this run's error
    }
    r.error = failure_message(s, r, meter, e, batch, in_loop, saving);
    throw_failed(r, meter, wall_s);
  }
  // Training that diverged (the final loss NaN or infinite): a failed run, not a result.
  if (r.status == RunStatus::Completed && !std::isfinite(r.final_loss)) {
    char lr[32], loss[32];
    std::snprintf(lr, sizeof lr, "%g", static_cast<double>(s.lr));
    std::snprintf(loss, sizeof loss, "%g", r.final_loss);
    r.error = "run '" + s.label + "' diverged: its final loss is " + loss + " after " + std::to_string(r.batches_done) +
              " batches; use a smaller --lr (" + lr + " now), or --check-finite to stop at the first batch whose loss "
              "is not finite";
    r.status = RunStatus::Failed;
    throw RunFailed(r.error, r);
  }
  char line[128];
  std::snprintf(line, sizeof line, "increased memory: %.1f MB (tracked; RSS +%.1f MB)", r.mem_increase_bytes / 1e6,
                r.rss_increase_bytes / 1e6);
  out << line << std::endl;
  // stdout could not take the run's lines: the run fails, what it measured
  // kept (its queued batches finished: nothing is dropped).
  if (const std::string why = output_problem(out); !why.empty()) {
    r.status = RunStatus::Failed;
    r.error = "run '" + s.label + "' failed at batch " + std::to_string(r.batches_done) + " of " +
              std::to_string(s.total_batches()) + ": " + why;
    throw RunFailed(r.error, r);
  }
  return r;
}

}  // namespace amlp::train
