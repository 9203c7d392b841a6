// experiment.h — one training run of the d2l "Asynchronous Computation"
// experiment, measured, and --compare (every mode back to back).
//
//   RunSpec s = spec_from_options(opts);           // or fill one by hand
//   RunResult r = run_experiment(s, std::cout);    // prints the book's lines
//   print_summary(r, std::cout);
//
// The memory model (stated in --help; the README explains it), for the
// allocation policy `enqueue` (the default):
//   bytes_per_batch  = what the frontend allocates for one batch (data, forward,
//                      loss, backward, step, the loss read), the change in
//                      MemoryStats::bytes_allocated_total across the batch
//                      (under run, where the worker allocates, the run's
//                      allocations over its batches);
//   backlog          = batches alive: those whose last op has not completed,
//                      plus the one being queued. It only rises when a batch
//                      starts, so its peak is sampled there;
//   predicted        = peak backlog × bytes_per_batch, and with back-pressure
//                      of B bytes at most B + one op's largest output.
// Every queued op holds its outputs until it has run, and the loop releases the
// gradients after each step (set-to-none), so a finished batch holds nothing:
// the bytes in use above the start are those of the alive batches, less what
// the worker has already freed of the one it is running. The prediction is
// therefore an upper bound, and exact when the backlog is all unstarted work.
//
// For `run` (outputs allocated when the worker starts their op) queued work
// holds nothing; what is in use is what the op running and the rest of its
// batch need, plus, with the data queue, the data generated ahead:
//   working_set      = the device queue's peak backlog bytes (blocks that
//                      exist, referenced by pending ops) less the bytes in
//                      use at the start (the parameters, which every batch's
//                      ops reference);
//   data_bytes_per_batch = the blocks of one batch's X and y;
//   peak_data_ahead  = the data queue's peak backlog bytes: the data
//                      generated and still needed by training ops (a lead of
//                      peak_data_ahead / data_bytes_per_batch batches);
//   predicted        = working_set + peak_data_ahead.
// Both are measured by the queues during the run; the two peaks fall at
// nearly the same time (the data lead holds while every batch reaches its
// working set), so their sum predicts the pool's peak.
#pragma once
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "framework/device.h"
#include "framework/error.h"
#include "models/mlp.h"
#include "train/options.h"
#include "train/sync_policy.h"

namespace amlp::train {

// One run: the settings (back-pressure applies to this run only, restored to
// 0 after) and the label it is reported under.
struct RunSpec : RunSettings {
  std::string label;  // "batch", "none", "every=10", "bounded"
};

// One device's share of a run (data parallelism: one per device; a
// single-device run has one). The memory model applies to each device: the
// batches alive on any queue (the run's peak backlog: another device's
// all-reduce may still read this device's gradients) × this device's bytes
// per batch.
struct DeviceResult {
  std::string device;
  int64_t rows_per_batch = 0;     // its part of each batch
  size_t start_bytes = 0, peak_bytes = 0, mem_increase_bytes = 0;
  size_t bytes_per_batch = 0;     // what one batch allocates on it
  int peak_backlog_batches = 0;   // its queue's most batches alive at once
  uint64_t peak_queue_depth = 0;
  size_t peak_backlog_bytes = 0;
  size_t working_set_bytes = 0;   // under run
  size_t predicted_increase_bytes = 0;
  double device_s_per_batch = 0;  // its queue's busy time per batch
};

struct RunResult {
  std::string label, mode, device;  // device: "cpu:0", or "cpu:0,cpu:1" with --devices
  int batches = 0, batch_size = 0;
  double wall_s = 0, samples_per_s = 0;
  size_t start_bytes = 0, peak_bytes = 0, end_bytes = 0;  // tracked pool, bytes in use
  size_t mem_increase_bytes = 0;                          // peak − start
  size_t start_rss = 0, peak_rss = 0, end_rss = 0;
  size_t rss_increase_bytes = 0;  // peak sampled RSS − start
  uint64_t peak_queue_depth = 0;  // ops
  int peak_backlog_batches = 0;   // most batches alive at once
  size_t peak_backlog_bytes = 0;  // bytes referenced by pending ops (QueueStats)
  size_t bytes_per_batch = 0;
  size_t predicted_increase_bytes = 0;
  size_t largest_tensor_bytes = 0;  // one op's largest output (rounded)
  // The allocation policy and the data queue (--alloc, --data-queue), and the
  // `run` model's measurements (see above).
  std::string alloc = "enqueue";
  bool data_queue = false;
  size_t data_bytes_per_batch = 0;   // blocks of X and y
  size_t peak_data_ahead_bytes = 0;  // the data queue's peak backlog (0 without it)
  double peak_data_lead_batches = 0; // peak_data_ahead_bytes / data_bytes_per_batch
  size_t working_set_bytes = 0;      // the device queue's peak backlog less the start's bytes
  uint64_t max_pending_ops = 0;
  size_t max_pending_bytes = 0;
  double final_loss = 0;  // NaN when no batch finished
  // Minor page faults of the process (every thread) over the loop and the
  // final waitall(): in all, per batch (in all / batches, warm-up included),
  // and in steady state: the median of the batches' memory-log rows in the
  // second half (one-time costs there do not count per batch).
  uint64_t minor_faults = 0;
  double minor_faults_per_batch = 0;
  double minor_faults_steady_per_batch = 0;
  // How the run ended: "completed", "failed" (error says why) or
  // "interrupted" (a SIGINT/SIGTERM: no batch was queued after it).
  std::string status = "completed";
  std::string error;
  int interrupt_signal = 0;  // the signal, when interrupted
  int batches_done = 0;      // batches queued (and finished, once the run ended); batches unless it stopped
  size_t memory_limit_bytes = 0;  // the device pool's cap during the run (0 = none)
  std::string memory_limit_source;
  // The throughput model (train/host_work.h): the host work asked for, the
  // frontend's (h) and the device's (d) measured seconds per batch, the
  // synchronization interval the model used and the wall time it predicts.
  int64_t host_work_ns = 0;
  std::string host_work_kind = "wait";
  double host_s_per_batch = 0, device_s_per_batch = 0;
  int model_every = 1;
  double predicted_wall_s = 0;
  // Data parallelism (--devices): one entry per device, in order (one entry,
  // the device, otherwise). The memory figures above are their sums (the
  // backlog and depth their maxima, d the slowest device's), and samples/s
  // counts the whole batch. blas_threads: each CPU GEMM's threads (0: as set).
  bool data_parallel = false;
  std::vector<DeviceResult> per_device;
  int blas_threads = 0;
};

// A run that failed: the one-line message, and what was measured up to the
// failure (status "failed"), for the summary.
struct RunFailed : Error {
  RunFailed(const std::string& what, RunResult partial_) : Error(what), partial(std::move(partial_)) {}
  RunResult partial;
};

RunSpec spec_from_options(const Options& o);  // the single run --sync asks for

// The memory model's prediction from a run's measurements (see above): for
// one device of it (`i`, with the run's settings), and for the run (their sum).
size_t predicted_increase(const RunResult& r, size_t i);
size_t predicted_increase(const RunResult& r);

// Runs one experiment on a clean device (waitall, empty cache, fresh peaks),
// printing the book's lines to `out`. When the run fails it drops the work
// still queued (drop_pending()), waits for the op running, and throws
// RunFailed (naming the mode and the batch; for out of memory, how to avoid
// it); the memory log keeps the rows written so far, and the row of a batch
// that failed while its loss was read is written with the loss empty. Once
// interrupt_signal() is set it queues no further batch: the queued ones
// finish and the result is marked "interrupted".
RunResult run_experiment(const RunSpec& spec, std::ostream& out);

// batch, none, every=K for each K in o.compare_every, and bounded (none with
// o.max_pending_bytes, or two batches' footprint when that is 0).
std::vector<RunSpec> compare_specs(const Options& o);
std::vector<RunResult> run_compare(const Options& o, std::ostream& out);
// The same, appending each run to `results` as it ends (a failed run's
// partial result too, before RunFailed propagates); stops after an
// interrupted run.
void run_compare(const Options& o, std::ostream& out, std::vector<RunResult>& results);

// --host-work match: the device's time per batch, measured over 8
// synchronized batches of the run `s` describes, after 3 not measured
// (printed to `out`); any other setting is returned as it is.
HostWork resolve_host_work(const RunSettings& s, std::ostream& out);

// --compare-policies: each of policy_modes(o), unsynchronized, appended to
// `results` as it ends (a failed run's partial result too, before RunFailed
// propagates); stops after an interrupted run.
void run_compare_policies(const Options& o, std::ostream& out, std::vector<RunResult>& results);
void print_policy_table(const Options& o, const std::vector<RunResult>& rs, std::ostream& out);

void print_summary(const RunResult& r, std::ostream& out);
void print_compare_table(const std::vector<RunResult>& rs, std::ostream& out);

}  // namespace amlp::train
