#include "train/experiment.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <limits>
#include <new>
#include <optional>
#include <ostream>
#include <sstream>

#include "framework/asyncmlp.h"
#include "train/byte_size.h"
#include "train/interrupt.h"
#include "train/memory_log.h"
#include "train/trainer.h"

namespace amlp::train {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Back-pressure for the lifetime of one run; unbounded again afterwards, even
// when the run throws.
class PendingLimit {
 public:
  PendingLimit(uint64_t ops, size_t bytes) { set_max_pending(ops, bytes); }
  ~PendingLimit() { set_max_pending(0, 0); }
  PendingLimit(const PendingLimit&) = delete;
  PendingLimit& operator=(const PendingLimit&) = delete;
};

// The allocation policy for the lifetime of one run; the previous one after.
class AllocPolicyScope {
 public:
  explicit AllocPolicyScope(AllocPolicy p) : previous_(alloc_policy()) { set_alloc_policy(p); }
  ~AllocPolicyScope() { set_alloc_policy(previous_); }
  AllocPolicyScope(const AllocPolicyScope&) = delete;
  AllocPolicyScope& operator=(const AllocPolicyScope&) = delete;

 private:
  AllocPolicy previous_;
};

// A clean device for each run: nothing pending, the cache handed back to the
// system (and glibc's free lists trimmed, so the RSS figures of back-to-back
// runs stand alone), peaks reset.
void fresh_device(Device d) {
  waitall();
  empty_cache(d);
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
  reset_peaks(d);
}

// The book prints the time at batches 50 and 100; shorter runs print at the
// halfway point and at the end.
bool prints_time_at(int batch, int batches) {
  if (batches >= 100) return batch % 50 == 0 || batch == batches;
  return batch == batches || (batches >= 2 && batch == batches / 2);
}

// Batches whose last op has not completed: seq of each batch's last op,
// compared with the queue's completed count (monotone, so a moving cursor).
class BacklogCounter {
 public:
  void batch_queued(uint64_t last_seq) { last_.push_back(last_seq); }
  // Batches with an op past `done` (the queue's completed or launched count).
  int pending(uint64_t done) const {
    return static_cast<int>(last_.end() - std::upper_bound(last_.begin(), last_.end(), done));
  }
  // The batch (1-based) that queued op `seq`, or 0 if it came after the last one.
  int batch_of(uint64_t seq) const {
    auto it = std::lower_bound(last_.begin(), last_.end(), seq);
    return it == last_.end() ? 0 : static_cast<int>(it - last_.begin()) + 1;
  }

 private:
  std::vector<uint64_t> last_;
};

std::string mode_text(const SyncMode& m) { return to_string(m); }


}  // namespace

size_t predicted_increase(const RunResult& r, size_t i) {
  const DeviceResult& d = r.per_device.at(i);
  // The data queue is the first device's (the data is drawn there).
  if (r.alloc == "run") return d.working_set_bytes + (i == 0 ? r.peak_data_ahead_bytes : 0);
  // A batch's blocks on this device may still be read by another device's
  // queue (the all-reduce reads every replica's gradient) after this queue
  // finished the batch: the batches alive on any queue count (one device: its own).
  size_t p = static_cast<size_t>(r.peak_backlog_batches) * d.bytes_per_batch;
  // Back-pressure caps the bytes each queue's pending ops hold; the op
  // waiting to be queued has already allocated its output.
  if (r.max_pending_bytes) p = std::min(p, r.max_pending_bytes + r.largest_tensor_bytes);
  return p;
}

size_t predicted_increase(const RunResult& r) {
  size_t p = 0;
  for (size_t i = 0; i < r.per_device.size(); ++i) p += predicted_increase(r, i);
  return p;
}

RunSpec spec_from_options(const Options& o) {
  RunSpec s;
  static_cast<RunSettings&>(s) = o;
  s.label = to_string(o.sync);
  if (o.max_pending_ops || o.max_pending_bytes) s.label += " (bounded)";
  return s;
}

namespace {

// Minor page faults at the loop's start and at the sample of batch
// `steady_from` (where the steady-state window starts).
struct FaultMarks {
  uint64_t start = 0, steady = 0;
  int steady_from = 0;
  std::vector<uint64_t> late_rows;  // each batch's faults after steady_from
};

// The frontend's clock for the throughput model (the devices' are in
// DeviceTrack): the loop's waits for the devices (item()) so far.
struct ClockMarks {
  double waited_s = 0;  // in the loop's blocking item() reads
  double loop_s = -1;   // the loop's wall time, once it ended (-1: it did not; wall_s is used)
  SyncMode sync;        // the run's, for the model's synchronization interval
};

// The loop's view of one device: its backlog, and its clocks at the start.
struct DeviceTrack {
  Device device;
  BacklogCounter backlog;
  double busy0 = 0, held0 = 0;
  uint64_t allocated0 = 0;  // the pool's bytes_allocated_total at the loop's start
  // On a GPU the queue's busy time is the time to *launch* the kernels; the
  // device's own time per batch comes from a timer before and after each
  // batch's ops (CUDA events), read as the GPU passes them.
  std::deque<std::pair<DeviceTimer, DeviceTimer>> open_timers;
  double timed_s = 0;
  int timed_batches = 0;

  // Reads the batches the device has finished (all of them with `wait`).
  void read_timers(bool wait) {
    while (!open_timers.empty() && (wait || open_timers.front().second.reached())) {
      try {
        timed_s += open_timers.front().second.seconds_since(open_timers.front().first);
        ++timed_batches;
      } catch (const Error&) {  // a batch that never ran (a stopped run): no time
      }
      open_timers.pop_front();
    }
  }
};

// What a run measured from its start to now (also for a run that stopped).
void measure_end(RunResult& r, std::vector<DeviceTrack>& tracks, double wall_s, const FaultMarks& f,
                 const ClockMarks& c) {
  r.wall_s = wall_s;
  r.samples_per_s = r.wall_s > 0 ? double(r.batches_done) * double(r.batch_size) / r.wall_s : 0;
  r.end_rss = process_rss_bytes();
  r.peak_rss = std::max(r.peak_rss, r.end_rss);
  r.rss_increase_bytes = r.peak_rss > r.start_rss ? r.peak_rss - r.start_rss : 0;
  // Each device alone, then the run: sums of the memory, maxima of the backlog.
  r.peak_bytes = r.mem_increase_bytes = r.peak_backlog_bytes = r.working_set_bytes = 0;
  r.peak_queue_depth = 0;
  double held_s = 0, busy_max = 0;
  uint64_t allocated = 0;
  for (size_t i = 0; i < tracks.size(); ++i) {
    DeviceResult& dr = r.per_device[i];
    const MemoryStats m = memory_stats(tracks[i].device);
    const QueueStats q = queue_stats(tracks[i].device);
    dr.peak_bytes = m.peak_bytes;
    dr.mem_increase_bytes = m.peak_bytes > dr.start_bytes ? m.peak_bytes - dr.start_bytes : 0;
    dr.peak_queue_depth = q.peak_depth;
    dr.peak_backlog_bytes = q.peak_backlog_bytes;
    // Under run the worker allocates, long after the frontend queued the batch:
    // what a batch allocates is the run's allocations over its batches.
    if (r.alloc == "run" && r.batches_done > 0)
      dr.bytes_per_batch = (m.bytes_allocated_total - tracks[i].allocated0) / static_cast<uint64_t>(r.batches_done);
    dr.working_set_bytes = q.peak_backlog_bytes > dr.start_bytes ? q.peak_backlog_bytes - dr.start_bytes : 0;
    if (r.batches_done > 0) dr.device_s_per_batch = std::max(0.0, q.busy_s - tracks[i].busy0) / r.batches_done;
    tracks[i].read_timers(/*wait=*/true);
    if (tracks[i].timed_batches > 0) dr.device_s_per_batch = tracks[i].timed_s / tracks[i].timed_batches;
    held_s += q.held_s - tracks[i].held0;
    busy_max = std::max(busy_max, dr.device_s_per_batch);
    allocated += dr.bytes_per_batch;
    r.peak_bytes += dr.peak_bytes;
    r.mem_increase_bytes += dr.mem_increase_bytes;
    r.peak_queue_depth = std::max(r.peak_queue_depth, dr.peak_queue_depth);
    r.peak_backlog_bytes += dr.peak_backlog_bytes;
    r.working_set_bytes += dr.working_set_bytes;
  }
  r.bytes_per_batch = allocated;
  if (r.data_queue) {
    r.peak_data_ahead_bytes = data_queue_stats(tracks[0].device).peak_backlog_bytes;
    r.peak_data_lead_batches =
        r.data_bytes_per_batch ? double(r.peak_data_ahead_bytes) / double(r.data_bytes_per_batch) : 0;
  }
  for (size_t i = 0; i < tracks.size(); ++i) r.per_device[i].predicted_increase_bytes = predicted_increase(r, i);
  r.predicted_increase_bytes = predicted_increase(r);
  // The throughput model: h is what the loop spent that was not waiting for
  // the devices (item(), back-pressure), d the busiest queue's busy time, per batch.
  if (r.batches_done > 0) {
    const double loop_s = c.loop_s >= 0 ? c.loop_s : wall_s;
    const double frontend_s = loop_s - c.waited_s - held_s;
    r.host_s_per_batch = std::max(0.0, frontend_s) / r.batches_done;
    r.device_s_per_batch = busy_max;
  }
  r.model_every = model_every(c.sync, r.batches_done, r.max_pending_bytes, r.bytes_per_batch);
  r.predicted_wall_s = predicted_wall_s(r.batches_done, r.model_every, r.host_s_per_batch, r.device_s_per_batch);
  // Faults of every thread over the loop and the final waitall(): in all, per
  // batch, and per batch after `steady_from` (an upper bound unsynchronized:
  // the worker may still be faulting for earlier batches in that window).
  const uint64_t now = process_minor_faults();
  const int done = r.batches_done;
  r.minor_faults = now - f.start;
  r.minor_faults_per_batch = done ? double(r.minor_faults) / double(done) : 0;
  // Steady state: the median batch of the second half, so a one-time cost
  // (OpenBLAS's first buffers, a malloc arena growing) that lands there does
  // not read as a per-batch one.
  if (f.late_rows.empty()) {
    r.minor_faults_steady_per_batch = r.minor_faults_per_batch;
  } else {
    std::vector<uint64_t> v = f.late_rows;
    const size_t mid = (v.size() - 1) / 2;  // the lower median
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
    r.minor_faults_steady_per_batch = double(v[mid]);
  }
}

// How to stay under the pool's limit, after an OutOfMemory.
std::string oom_advice(const RunResult& r) {
  if (r.peak_backlog_batches <= 1)
    return "; one batch alone does not fit: use a smaller --batch-size or --hidden, or raise --memory-limit";
  return "; the queued batches outgrew it: bound them with --max-pending-bytes, synchronize with --sync every=K, "
         "use a smaller --batch-size, or raise --memory-limit";
}

// "cpu:0,cpu:1"
std::string device_list(const std::vector<Device>& ds) {
  std::string t;
  for (const Device& d : ds) t += (t.empty() ? "" : ",") + d.str();
  return t;
}

}  // namespace

RunResult run_experiment(const RunSpec& s, std::ostream& out) {
  const std::vector<Device> devs = run_devices(s);
  const Device d = devs[0];  // where the data is drawn (and the only device without --devices)
  const int64_t B = s.batch_size, F = s.features;

  RunResult r;
  r.label = s.label;
  r.mode = mode_text(s.sync);
  r.device = device_list(devs);
  r.data_parallel = !s.devices.empty();
  r.batches = s.batches;
  r.batch_size = s.batch_size;
  r.max_pending_ops = s.max_pending_ops;
  r.max_pending_bytes = s.max_pending_bytes;
  r.final_loss = std::numeric_limits<double>::quiet_NaN();
  r.host_work_ns = s.host_work.ns;
  r.host_work_kind = to_string(s.host_work.kind);
  {
    int64_t widest = F;
    for (int64_t h : s.hidden.hidden) widest = std::max(widest, h);
    r.largest_tensor_bytes = pool_block_bytes(static_cast<size_t>(B * widest) * sizeof(float));
  }
  r.alloc = to_string(s.alloc);
  r.data_queue = s.data_queue;
  r.data_bytes_per_batch =
      pool_block_bytes(static_cast<size_t>(B * F) * sizeof(float)) + pool_block_bytes(static_cast<size_t>(B) * sizeof(float));
  std::vector<DeviceTrack> tracks;
  for (const Device& dev : devs) {
    tracks.push_back(DeviceTrack{dev, {}, 0, 0, 0});
    r.per_device.push_back(DeviceResult{});
    r.per_device.back().device = dev.str();
  }
  const AllocPolicyScope policy(s.alloc);
  const BlasThreadsShare blas(devs);  // the replicas' GEMMs share the cores
  r.blas_threads = r.data_parallel ? blas_threads() : 0;

  MemoryLog log;
  std::optional<BatchSample> unwritten;  // a batch's row, built, while its loss is read
  int batch = 0;
  bool in_loop = false;
  Clock::time_point t0 = Clock::now();
  FaultMarks faults;
  ClockMarks clocks;
  clocks.sync = s.sync;
  faults.steady_from = s.batches / 2;  // the steady-state window starts at this batch's sample (0: the start)
  uint64_t faults_before = 0;
  try {
    const MemoryBudget limit = memory_limit(d);
    r.memory_limit_bytes = limit.bytes;
    r.memory_limit_source = limit.bytes ? limit.source : "none";
    for (const Device& dev : devs) fresh_device(dev);

    // Same seed ⇒ same weights and the same data in every mode, on one device or several.
    manual_seed(s.seed);
    Trainer trainer(s, devs);
    {
      const std::vector<int64_t> rows = trainer.rows(B);
      for (size_t i = 0; i < devs.size(); ++i) r.per_device[i].rows_per_batch = rows[i];
    }
    for (const Device& dev : devs) fresh_device(dev);

    if (!s.memory_log.empty())  // opened before the run
      log = MemoryLog(s.memory_log, r.data_parallel ? devs : std::vector<Device>{});
    PendingLimit pending_limit(s.max_pending_ops, s.max_pending_bytes);
    const std::string run_name = "run " + s.label;
    trace::Scope run_span(run_name.c_str());

    r.start_bytes = 0;
    for (size_t i = 0; i < devs.size(); ++i) {
      r.per_device[i].start_bytes = memory_stats(devs[i]).bytes_in_use;
      r.start_bytes += r.per_device[i].start_bytes;
    }
    r.start_rss = r.peak_rss = process_rss_bytes();
    std::vector<Tensor> last_loss;  // the last batch's per-sample losses, for the final figure
    bool last_synced = false;
    t0 = Clock::now();
    faults.start = faults.steady = faults_before = process_minor_faults();
    for (DeviceTrack& t : tracks) {
      const QueueStats q0 = queue_stats(t.device);
      t.busy0 = q0.busy_s;
      t.held0 = q0.held_s;
      t.allocated0 = memory_stats(t.device).bytes_allocated_total;
    }
    in_loop = true;
    std::vector<uint64_t> allocated_before(devs.size());
    for (batch = 1; batch <= s.batches; ++batch) {
      trace::Scope batch_span("batch");
      if (s.host_work.ns) {  // the input pipeline's work for this batch, before any of its ops is queued
        trace::Scope host_span("host work");
        do_host_work(s.host_work);
      }
      // Batches alive from now on, on each device: the ones the worker has not
      // finished launching, and this one. A block goes back to the pool when
      // its last op is *launched*: on the CPU that is when it has run; on CUDA
      // the stream orders every later use after it, so the pool reuses it at
      // once, as PyTorch's caching allocator does, and what holds memory is
      // our queue's backlog, not the GPU's. The count only rises when a batch
      // starts, so its peak is seen here.
      for (size_t i = 0; i < devs.size(); ++i) {
        allocated_before[i] = memory_stats(devs[i]).bytes_allocated_total;
        const int alive = tracks[i].backlog.pending(queue_stats(devs[i]).launched) + 1;
        r.per_device[i].peak_backlog_batches = std::max(r.per_device[i].peak_backlog_batches, alive);
        r.peak_backlog_batches = std::max(r.peak_backlog_batches, alive);
        if (devs[i].is_cuda()) tracks[i].open_timers.emplace_back(DeviceTimer::mark(devs[i]), DeviceTimer{});
      }

      // The data iterator: X ~ N(0, 1) (B, F), y = ones (B), generated by queued
      // ops on the first device; with --data-queue on its data queue (a loader
      // stream), which the training ops below wait on.
      Tensor X, y;
      {
        std::optional<DataQueueGuard> loader;
        if (s.data_queue) loader.emplace(d);
        X = randn({B, F}, d);
        y = ones({B}, d);
      }
      if (prints_time_at(batch, s.batches)) {
        char line[64];
        std::snprintf(line, sizeof line, "batch %d, time %.4f sec", batch, seconds_since(t0));
        out << line << std::endl;
      }
      std::vector<Tensor> ls = trainer.forward_backward(X, y);
      trainer.step(B);
      for (size_t i = 0; i < devs.size(); ++i)
        if (devs[i].is_cuda()) {
          tracks[i].open_timers.back().second = DeviceTimer::mark(devs[i]);
          tracks[i].read_timers(/*wait=*/false);
        }
      if (s.check_finite)
        for (const Tensor& l : ls) check_finite(l, "loss");

      // The sample: the batch is queued; nothing has waited for it yet.
      BatchSample row;
      row.batch = batch;
      row.wall_s = seconds_since(t0);
      for (size_t i = 0; i < devs.size(); ++i) {
        const QueueStats q = queue_stats(devs[i]);
        const MemoryStats m = memory_stats(devs[i]);
        tracks[i].backlog.batch_queued(q.pushed);
        DeviceSample ds;
        ds.queue_depth = q.depth;
        ds.bytes_in_use = m.bytes_in_use;
        ds.backlog_batches = tracks[i].backlog.pending(q.completed);
        row.queue_depth += q.depth;
        row.bytes_in_use += m.bytes_in_use;
        row.peak_bytes += m.peak_bytes;
        row.reserved_bytes += m.reserved_bytes;
        row.backlog_bytes += q.backlog_bytes;
        row.backlog_batches = std::max(row.backlog_batches, ds.backlog_batches);
        if (r.data_parallel) row.per_device.push_back(ds);
        if (trace::enabled())
          trace::counter(("bytes in use MiB " + devs[i].str()).c_str(), trace::now_us(), m.bytes_in_use / 1048576.0);
      }
      row.rss_bytes = process_rss_bytes();
      const uint64_t faults_now = process_minor_faults();
      row.minor_faults = faults_now - faults_before;
      faults_before = faults_now;
      if (batch == faults.steady_from) faults.steady = faults_now;
      if (batch > faults.steady_from) faults.late_rows.push_back(row.minor_faults);
      r.peak_rss = std::max(r.peak_rss, row.rss_bytes);
      if (trace::enabled()) trace::counter("backlog batches", trace::now_us(), row.backlog_batches);

      last_synced = s.sync.syncs_after(batch);
      if (last_synced) {  // the book's run 1: read the loss (a blocking item())
        unwritten = row;  // a failure while reading still leaves the batch's row (loss empty)
        const Clock::time_point w0 = Clock::now();
        row.loss = trainer.mean_loss(ls).item();
        clocks.waited_s += seconds_since(w0);
        r.final_loss = *row.loss;
      }
      // Under enqueue the batch's outputs were allocated as it was queued (under
      // run measure_end() takes the run's average instead).
      for (size_t i = 0; i < devs.size(); ++i)
        r.per_device[i].bytes_per_batch = std::max<size_t>(
            r.per_device[i].bytes_per_batch, memory_stats(devs[i]).bytes_allocated_total - allocated_before[i]);
      unwritten.reset();
      log.write(row);
      r.batches_done = batch;
      if (batch == s.batches) {
        last_loss = ls;
      } else if (const int sig = interrupt_signal()) {  // queue nothing more; what is queued finishes
        r.interrupt_signal = sig;
        last_loss = ls;
        break;
      }
    }
    in_loop = false;
    clocks.loop_s = seconds_since(t0);
    waitall();
    measure_end(r, tracks, seconds_since(t0), faults, clocks);
    if (!last_synced && !last_loss.empty()) r.final_loss = trainer.mean_loss(last_loss).item();
    last_loss.clear();
    r.end_bytes = 0;
    for (const Device& dev : devs) r.end_bytes += memory_stats(dev).bytes_in_use;
    // A signal that came once every batch was queued (the final waitall)
    // interrupted the run too: nothing was left to stop, but it was asked.
    if (!r.interrupt_signal) r.interrupt_signal = interrupt_signal();
    if (r.interrupt_signal) r.status = "interrupted";
  } catch (const std::exception& e) {
    const double wall_s = seconds_since(t0);
    std::string what = dynamic_cast<const std::bad_alloc*>(&e) ? "the host ran out of memory (std::bad_alloc)"
                                                                 : std::string(e.what());
    try {
      if (unwritten) {  // the batch failed while its loss was read: its row, loss empty
        const BatchSample row = *unwritten;
        unwritten.reset();
        log.write(row);
      }
    } catch (const std::exception&) {  // the log's own failure is not this run's error
    }
    // Nothing queued after the failure is worth minutes of work: drop it, and
    // wait only for the op running now.
    drop_pending();
    try {
      waitall();
    } catch (const std::exception&) {  // the error reported here is the one above
    }
    std::string where = !in_loop                ? (batch == 0 ? "before its first batch" : "in the final waitall()")
                        : batch <= s.batches ? "at batch " + std::to_string(batch) + " of " + std::to_string(s.batches)
                                             : "in the final waitall()";
    if (auto* k = dynamic_cast<const KernelError*>(&e))
      for (const DeviceTrack& t : tracks)  // the batch that queued the op, from its device's sequence numbers
        if (t.device.str() == k->device)
          if (int b = t.backlog.batch_of(k->seq); b && b != batch)
            what += " (op #" + std::to_string(k->seq) + " was queued in batch " + std::to_string(b) + ")";
    if (dynamic_cast<const OutOfMemory*>(&e)) what += oom_advice(r);
    const std::string message = "run '" + s.label + "' failed " + where + ": " + what;
    measure_end(r, tracks, wall_s, faults, clocks);
    r.end_bytes = 0;
    for (const Device& dev : devs) r.end_bytes += memory_stats(dev).bytes_in_use;
    r.status = "failed";
    r.error = message;
    throw RunFailed(message, r);
  }

  char line[128];
  std::snprintf(line, sizeof line, "increased memory: %.1f MB (tracked; RSS +%.1f MB)", r.mem_increase_bytes / 1e6,
                r.rss_increase_bytes / 1e6);
  out << line << std::endl;
  return r;
}

std::vector<RunSpec> compare_specs(const Options& o) {
  std::vector<RunSpec> specs;
  for (const CompareMode& m : compare_modes(o)) {
    RunSpec s = spec_from_options(o);
    s.sync = m.sync;
    s.label = m.bounded ? "bounded" : to_string(m.sync);
    s.max_pending_ops = m.bounded ? o.max_pending_ops : 0;
    s.max_pending_bytes = m.bounded ? o.max_pending_bytes : 0;  // 0: two batches' footprint, once measured
    s.memory_log = o.memory_log.empty() ? "" : tagged_path(o.memory_log, m.tag);
    specs.push_back(s);
  }
  return specs;
}

namespace {
// One run of a comparison, appended to `results` as it ends; a failed run's
// partial result too, before RunFailed propagates.
void run_into(const RunSpec& s, std::ostream& out, std::vector<RunResult>& results) {
  try {
    results.push_back(run_experiment(s, out));
  } catch (const RunFailed& e) {
    results.push_back(e.partial);
    throw;
  }
}
}  // namespace

std::vector<RunResult> run_compare(const Options& o, std::ostream& out) {
  std::vector<RunResult> results;
  run_compare(o, out, results);
  return results;
}

void run_compare(const Options& o, std::ostream& out, std::vector<RunResult>& results) {
  for (RunSpec s : compare_specs(o)) {
    if (interrupt_signal()) break;  // the interrupted run was the last
    if (s.label == "bounded" && s.max_pending_bytes == 0) {
      size_t bpb = 0;
      for (const RunResult& r : results) bpb = std::max(bpb, r.bytes_per_batch);
      s.max_pending_bytes = 2 * bpb;
    }
    out << "\n== " << s.label;
    if (s.max_pending_bytes) out << " (none, max-pending-bytes " << format_mb(double(s.max_pending_bytes)) << ")";
    out << " ==" << std::endl;
    run_into(s, out, results);
  }
  for (const Device& dev : run_devices(o)) fresh_device(dev);
}

HostWork resolve_host_work(const RunSettings& settings, std::ostream& out) {
  HostWork w = settings.host_work;
  if (!w.match_device) return w;
  constexpr int kBatches = 8;
  RunSpec c;
  static_cast<RunSettings&>(c) = settings;
  c.label = "host-work calibration";
  c.sync = SyncMode{SyncPolicy::EveryBatch, 1};
  c.batches = std::min(kBatches, settings.batches);
  c.host_work = HostWork{};
  c.max_pending_ops = 0;
  c.max_pending_bytes = 0;
  c.memory_log.clear();
  std::ostringstream quiet;  // its lines are not the run's
  {
    RunSpec warm = c;  // the first batches pay for cold caches and threads starting: not measured
    warm.batches = std::min(3, settings.batches);
    run_experiment(warm, quiet);
  }
  const RunResult r = run_experiment(c, quiet);
  w.ns = std::max<int64_t>(1000, static_cast<int64_t>(r.device_s_per_batch * 1e9));
  w.match_device = false;
  char line[160];
  std::snprintf(line, sizeof line,
                "host work: %.3f ms per batch (%s), the device's time per batch over %d synchronized batches",
                w.ns / 1e6, to_string(w.kind).c_str(), c.batches);
  out << line << std::endl;
  return w;
}

void run_compare_policies(const Options& o, std::ostream& out, std::vector<RunResult>& results) {
  for (const PolicyMode& m : policy_modes(o)) {
    if (interrupt_signal()) break;  // the interrupted run was the last
    RunSpec s = spec_from_options(o);
    s.sync = SyncMode{SyncPolicy::Never, 0};
    s.alloc = m.alloc;
    s.data_queue = m.data_queue;
    s.label = m.tag;
    s.memory_log = o.memory_log.empty() ? "" : tagged_path(o.memory_log, m.tag);
    out << "\n== " << m.tag << " (--sync none --alloc " << to_string(m.alloc) << (m.data_queue ? " --data-queue" : "")
        << ") ==" << std::endl;
    run_into(s, out, results);
  }
  for (const Device& dev : run_devices(o)) fresh_device(dev);
}

}  // namespace amlp::train
