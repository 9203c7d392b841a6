#include "train/runs/run_meter.h"

#include <algorithm>

#include "train/predict/predict.h"

namespace amlp::train {

int BacklogCounter::pending(uint64_t done) const {
  return static_cast<int>(last_.end() - std::upper_bound(last_.begin(), last_.end(), done));
}

int BacklogCounter::batch_of(uint64_t seq) const {
  auto it = std::lower_bound(last_.begin(), last_.end(), seq);
  return it == last_.end() ? 0 : static_cast<int>(it - last_.begin()) + 1;
}

void RunMeter::Track::read_timers(bool wait) {
  while (!open_timers.empty() && (wait || open_timers.front().second.reached())) {
    try {
      timed_s += open_timers.front().second.seconds_since(open_timers.front().first);
      ++timed_batches;
    } catch (const Error&) {  // a batch that never ran (a stopped run): no time
    }
    open_timers.pop_front();
  }
}

RunMeter::RunMeter(RunResult& r, const std::vector<Device>& devices) : r_(r), m_(r.measured) {
  set_kernel_clock(true);  // the kernels' own time, for d taken apart (decompose_d)
  for (const Device& d : devices) tracks_.push_back(Track{d, {}, 0, 0, 0, 0, 0, 0, 0, {}, 0, 0, 0, 0, {}});
}

void RunMeter::start() {
  if (may_need_fresh_memory(r_.asked)) fresh_s_per_byte();  // probed once, before the clock starts
  m_.start_bytes = 0;
  for (size_t i = 0; i < tracks_.size(); ++i) {
    Track& t = tracks_[i];
    const MemoryStats m = memory_stats(t.device);
    const QueueStats q = queue_stats(t.device);
    m_.per_device[i].start_bytes = m.bytes_in_use;
    m_.start_bytes += m.bytes_in_use;
    t.allocated0 = t.batch_allocated = m.bytes_allocated_total;
    t.reserved0 = t.peak_reserved = m.reserved_bytes;
    t.device_allocs0 = m.device_allocs;
    t.pushed0 = q.pushed;
    t.busy0 = q.busy_s;
    t.held0 = q.held_s;
    t.kernel0 = q.kernel_s;
    t.fresh0 = m.fresh;
  }
  m_.start_rss = m_.peak_rss = process_rss_bytes();
  t0_ = Clock::now();
  faults0_ = faults_before_ = process_minor_faults();
}

// Under enqueue a batch's outputs are allocated as it is queued, its loss
// read included: what the pool allocated from one batch's start to the next's
// (under run finish() takes the run's average instead).
void RunMeter::close_batch(size_t i, const MemoryStats& m) {
  Track& t = tracks_[i];
  m_.per_device[i].bytes_per_batch =
      std::max<size_t>(m_.per_device[i].bytes_per_batch, m.bytes_allocated_total - t.batch_allocated);
  t.batch_allocated = m.bytes_allocated_total;
  t.peak_reserved = std::max(t.peak_reserved, m.reserved_bytes);
}

void RunMeter::before_batch() {
  // Batches alive from now on, on each device: the ones the worker has not
  // finished launching, and this one. A block goes back to the pool when its
  // last op is *launched*: on the CPU that is when it has run; on CUDA the
  // stream orders every later use after it, so the pool reuses it at once, as
  // PyTorch's caching allocator does, and what holds memory is our queue's
  // backlog, not the GPU's.
  for (size_t i = 0; i < tracks_.size(); ++i) {
    Track& t = tracks_[i];
    const MemoryStats m = memory_stats(t.device);
    const QueueStats q = queue_stats(t.device);
    if (batch_open_) close_batch(i, m);
    const int alive = t.backlog.pending(q.launched) + 1;
    m_.per_device[i].peak_backlog_batches = std::max(m_.per_device[i].peak_backlog_batches, alive);
    m_.peak_backlog_batches = std::max(m_.peak_backlog_batches, alive);
    if (t.device.is_cuda()) t.open_timers.emplace_back(DeviceTimer::mark(t.device), DeviceTimer{});
  }
  batch_open_ = true;
}

void RunMeter::after_step() {
  for (Track& t : tracks_)
    if (t.device.is_cuda()) {
      t.open_timers.back().second = DeviceTimer::mark(t.device);
      t.read_timers(/*wait=*/false);
    }
}

BatchSample RunMeter::after_queue(int batch) {
  BatchSample row;
  row.batch = batch;
  row.wall_s = seconds();
  for (Track& t : tracks_) {
    const QueueStats q = queue_stats(t.device);
    const MemoryStats m = memory_stats(t.device);
    t.backlog.batch_queued(q.pushed);
    if (&t == &tracks_.front()) last_seq_ = q.pushed;
    t.peak_reserved = std::max(t.peak_reserved, m.reserved_bytes);
    DeviceSample ds;
    ds.queue_depth = q.depth;
    ds.bytes_in_use = m.bytes_in_use;
    ds.backlog_batches = t.backlog.pending(q.completed);
    row.queue_depth += q.depth;
    row.bytes_in_use += m.bytes_in_use;
    row.peak_bytes += m.peak_bytes;
    row.reserved_bytes += m.reserved_bytes;
    row.backlog_bytes += q.backlog_bytes;
    row.backlog_batches = std::max(row.backlog_batches, ds.backlog_batches);
    if (r_.data_parallel()) row.per_device.push_back(ds);
    if (trace::enabled())
      trace::counter(("bytes in use MiB " + t.device.str()).c_str(), trace::now_us(), m.bytes_in_use / 1048576.0);
  }
  row.rss_bytes = process_rss_bytes();
  const uint64_t faults_now = process_minor_faults();
  row.minor_faults = faults_now - faults_before_;
  faults_before_ = faults_now;
  // The steady-state window: the batches of the second half.
  if (batch > r_.asked.options.batches / 2) late_rows_.push_back(row.minor_faults);
  m_.peak_rss = std::max(m_.peak_rss, row.rss_bytes);
  if (trace::enabled()) trace::counter("backlog batches", trace::now_us(), row.backlog_batches);
  return row;
}

void RunMeter::loop_ended() {
  loop_s_ = seconds();
  for (size_t i = 0; i < tracks_.size(); ++i)
    if (batch_open_) close_batch(i, memory_stats(tracks_[i].device));
  batch_open_ = false;
}

int RunMeter::batch_of(const std::string& device, uint64_t seq) const {
  for (const Track& t : tracks_)
    if (t.device.str() == device) return t.backlog.batch_of(seq);
  return 0;
}

size_t RunMeter::bytes_in_use() const {
  size_t b = 0;
  for (const Track& t : tracks_) b += memory_stats(t.device).bytes_in_use;
  return b;
}

size_t RunMeter::bytes_per_batch() const {
  size_t b = 0;
  for (const DeviceResult& d : m_.per_device) b += d.bytes_per_batch;
  return b;
}

// On a CPU device d is its queue's busy time per batch, and the kernels'
// own time and the worker's backing time are measured inside it; on CUDA d
// is the GPU's (a timer), which neither clock sees: not taken apart.
void RunMeter::decompose_d(const std::vector<double>& kernels_s, const std::vector<FreshBacking>& fresh,
                           size_t busiest) {
  RunResult& r = r_;
  r.measured.backing = FreshBacking{};
  for (const FreshBacking& f : fresh) r.measured.backing += f;
  r.measured.d_measured = r.measured.batches_done > 0 && busiest < tracks_.size() && !tracks_[busiest].device.is_cuda();
  r.measured.d_kernels_s = r.measured.d_fresh_s = r.measured.d_rest_s = 0;
  if (!r.measured.d_measured) return;
  const double n = r.measured.batches_done;
  r.measured.d_kernels_s = std::max(0.0, kernels_s[busiest]) / n;
  r.measured.d_fresh_s = std::max(0.0, fresh[busiest].worker_s) / n;
  r.measured.d_rest_s = r.measured.device_s_per_batch - r.measured.d_kernels_s -
                        r.measured.d_fresh_s;  // may be below 0 by the clocks' grain
}

void RunMeter::finish(double wall_s) {
  RunResult& r = r_;
  r.measured.wall_s = wall_s;
  r.measured.samples_per_s =
      r.measured.wall_s > 0 ? double(r.measured.batches_done) * double(r.asked.options.batch_size) / r.measured.wall_s
                            : 0;
  r.measured.end_rss = process_rss_bytes();
  r.measured.peak_rss = std::max(r.measured.peak_rss, r.measured.end_rss);
  r.measured.rss_increase_bytes =
      r.measured.peak_rss > r.measured.start_rss ? r.measured.peak_rss - r.measured.start_rss : 0;
  const DeviceTotals totals = measure_devices();
  predict(totals, wall_s);
  count_faults();
}

RunMeter::DeviceTotals RunMeter::measure_devices() {
  RunResult& r = r_;
  // Each device alone, then the run: sums of the memory, maxima of the backlog.
  r.measured.peak_bytes = r.measured.mem_increase_bytes = r.measured.peak_backlog_bytes = r.measured.working_set_bytes =
      0;
  r.measured.peak_queue_depth = 0;
  r.measured.fresh_bytes = 0;
  r.measured.device_allocs = 0;
  DeviceTotals out;
  out.kernels_s.resize(tracks_.size());
  out.fresh.resize(tracks_.size());
  uint64_t pushed = 0, allocated = 0;
  for (size_t i = 0; i < tracks_.size(); ++i) {
    Track& t = tracks_[i];
    DeviceResult& dr = r.measured.per_device[i];
    const MemoryStats m = memory_stats(t.device);
    const QueueStats q = queue_stats(t.device);
    dr.peak_bytes = m.peak_bytes;
    r.measured.device_allocs += m.device_allocs - t.device_allocs0;
    pushed += q.pushed - t.pushed0;
    dr.mem_increase_bytes = m.peak_bytes > dr.start_bytes ? m.peak_bytes - dr.start_bytes : 0;
    dr.peak_queue_depth = q.peak_unlaunched;
    dr.peak_backlog_bytes = q.peak_backlog_bytes;
    // Under run the worker allocates, long after the frontend queued the batch:
    // what a batch allocates is the run's allocations over its batches.
    if (r.asked.options.alloc == AllocPolicy::Run && r.measured.batches_done > 0)
      dr.bytes_per_batch = (m.bytes_allocated_total - t.allocated0) / static_cast<uint64_t>(r.measured.batches_done);
    dr.working_set_bytes = q.peak_backlog_bytes > dr.start_bytes ? q.peak_backlog_bytes - dr.start_bytes : 0;
    if (r.measured.batches_done > 0)
      dr.device_s_per_batch = std::max(0.0, q.busy_s - t.busy0) / r.measured.batches_done;
    t.read_timers(/*wait=*/true);
    if (t.timed_batches > 0) dr.device_s_per_batch = t.timed_s / t.timed_batches;
    t.peak_reserved = std::max(t.peak_reserved, m.reserved_bytes);
    dr.start_reserved_bytes = t.reserved0;
    dr.peak_reserved_bytes = t.peak_reserved;
    // Fresh memory: what the pool had to obtain beyond what it held at the
    // start (its cache was handed back before the run). CUDA pools excluded.
    if (!t.device.is_cuda() && t.peak_reserved > t.reserved0) r.measured.fresh_bytes += t.peak_reserved - t.reserved0;
    out.held_s += q.held_s - t.held0;
    out.kernels_s[i] = q.kernel_s - t.kernel0;
    out.fresh[i] = m.fresh - t.fresh0;
    if (i == 0 || dr.device_s_per_batch > out.busy_max) out.busiest = i;
    out.busy_max = std::max(out.busy_max, dr.device_s_per_batch);
    allocated += dr.bytes_per_batch;
    r.measured.peak_bytes += dr.peak_bytes;
    r.measured.mem_increase_bytes += dr.mem_increase_bytes;
    r.measured.peak_queue_depth = std::max(r.measured.peak_queue_depth, dr.peak_queue_depth);
    r.measured.peak_backlog_bytes += dr.peak_backlog_bytes;
    r.measured.working_set_bytes += dr.working_set_bytes;
  }
  r.measured.bytes_per_batch = allocated;
  r.measured.ops_per_batch = r.measured.batches_done > 0 ? double(pushed) / double(r.measured.batches_done) : 0;
  if (r.asked.options.data_queue) {
    r.measured.peak_data_ahead_bytes = data_queue_stats(tracks_[0].device).peak_backlog_bytes;
    r.measured.peak_data_lead_batches = r.measured.data_bytes_per_batch ? double(r.measured.peak_data_ahead_bytes) /
                                                                              double(r.measured.data_bytes_per_batch)
                                                                        : 0;
  }
  return out;
}

void RunMeter::predict(const DeviceTotals& totals, double wall_s) {
  RunResult& r = r_;
  for (size_t i = 0; i < tracks_.size(); ++i)
    r.measured.per_device[i].predicted_increase_bytes = predicted_increase(r, i);
  r.predicted.increase_bytes = predicted_increase(r);
  // The throughput model: h is what the loop spent that was not waiting for
  // the devices (item(), back-pressure), d the busiest queue's busy time, per batch.
  if (r.measured.batches_done > 0) {
    const double loop_s = loop_s_ >= 0 ? loop_s_ : wall_s;
    r.measured.host_s_per_batch = std::max(0.0, loop_s - waited_s_ - totals.held_s) / r.measured.batches_done;
    r.measured.device_s_per_batch = totals.busy_max;
  }
  // With --epochs every mode also reads each epoch's last loss: `none` syncs once an epoch.
  r.predicted.every = model_every(r.asked.options.sync, std::min(r.measured.batches_done, r.asked.options.batches),
                                  r.asked.options.max_pending_bytes, r.measured.bytes_per_batch);
  decompose_d(totals.kernels_s, totals.fresh, totals.busiest);
  // The cost of fresh memory: what the worker spent backing it, counted where
  // it was paid (a CPU pool that obtained memory and counted its backing);
  // else the probe's price, only for a run that needed some.
  r.measured.fresh_counted = r.measured.d_measured && (r.measured.backing.bytes() > 0 || r.measured.fresh_bytes == 0);
  const double per_byte =
      !r.measured.fresh_counted && r.measured.fresh_bytes >= kFreshWorthMeasuring ? fresh_s_per_byte() : 0;
  const uint64_t backed = r.measured.backing.bytes();
  r.measured.fresh_s_per_gib = r.measured.fresh_counted
                                   ? (backed ? (r.measured.backing.worker_populate_s + r.measured.backing.populator_s) /
                                                   double(backed) * double(size_t(1) << 30)
                                             : 0)
                                   : per_byte * double(size_t(1) << 30);
  // Across processes the reductions' exposed time adds to the device's.
  r.predicted.comm_exposed_s = r.measured.comm_alpha_s > 0
                                   ? exposed_comm_s(r.asked, r.measured.device_s_per_batch,
                                                    CommCost{r.measured.comm_alpha_s, r.measured.comm_beta_s_per_byte})
                                   : 0;
  const ThroughputTerms t{r.measured.batches_done,
                          r.predicted.every,
                          r.measured.host_s_per_batch,
                          r.measured.device_s_per_batch + r.predicted.comm_exposed_s,
                          per_byte > 0 ? r.measured.fresh_bytes : 0,
                          per_byte,
                          r.measured.fresh_counted ? r.measured.d_fresh_s * r.measured.batches_done : -1};
  r.predicted.fresh_s = fresh_s(t);
  r.predicted.wall_s = predicted_wall_s(t);
}

void RunMeter::count_faults() {
  RunResult& r = r_;
  // Faults of every thread over the loop and the final waitall(): in all, per
  // batch, and the median batch of the second half (an upper bound
  // unsynchronized: the worker may still be faulting for earlier batches
  // then), so a one-time cost (OpenBLAS's first buffers, a malloc arena
  // growing) that lands there does not read as a per-batch one.
  const int done = r.measured.batches_done;
  r.measured.minor_faults = process_minor_faults() - faults0_;
  r.measured.minor_faults_per_batch = done ? double(r.measured.minor_faults) / double(done) : 0;
  if (late_rows_.empty()) {
    r.measured.minor_faults_steady_per_batch = r.measured.minor_faults_per_batch;
  } else {
    std::vector<uint64_t> v = late_rows_;
    const size_t mid = (v.size() - 1) / 2;  // the lower median
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
    r.measured.minor_faults_steady_per_batch = double(v[mid]);
  }
}

}  // namespace amlp::train
