// run_result.h — what one training run is asked to do (RunSpec) and its
// result: asked, measured, predicted (RunResult). Types only: train/runs/run_meter.h fills the measurements,
// train/predict/predict.h states the models, train/report/report.cpp and summary_json.cpp
// print them.
//
//   RunSpec s{options, "none"};                  // the settings, and the label the run is reported under
//   RunResult r = run_experiment(s, std::cout);  // r.asked is s, r.measured its figures, r.predicted the models'
//   double v = r.measured.samples_per_s;
//   if (r.status == RunStatus::Interrupted) ...
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "framework/error.h"
#include "framework/stats.h"
#include "train/options/options.h"

namespace amlp::train {

struct RunResult;

// The plan stage's one type: a run as the plan asks for it, the options as
// set for this run (back-pressure and the allocation policy apply to this
// run only, restored after), and where it stands in the plan.
struct RunSpec {
  Options options;    // as the plan set them for this run
  std::string label;  // reported under: "batch", "none", "every=10", "bounded", "enqueue", "run+data"
  std::string tag;    // in file names: batch, none, every10, bounded, enqueue, run, run+data
  // What a study (train/studies/) adds to its runs; unset for the one run
  // --sync asks for. `from_earlier` sets this run's options from the results
  // of the runs before it (--compare's bounded run: its bound from their
  // bytes per batch); `heading` is the line printed before the run, from its
  // options as they then are ("\n== bounded (none, max-pending-bytes 7.6 MB) ==").
  std::function<void(Options&, const std::vector<RunResult>&)> from_earlier;
  std::function<std::string(const RunSpec&)> heading;
};

enum class RunStatus {
  Completed,
  Failed,       // RunResult::error says why
  Interrupted,  // a SIGINT/SIGTERM/SIGHUP: no batch was queued after it
};
inline const char* to_string(RunStatus s) {
  switch (s) {
    case RunStatus::Completed:
      return "completed";
    case RunStatus::Failed:
      return "failed";
    case RunStatus::Interrupted:
      return "interrupted";
  }
  return "completed";
}

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
  uint64_t peak_queue_depth = 0;  // the most ops queued and not yet launched (QueueStats::peak_unlaunched)
  size_t peak_backlog_bytes = 0;
  size_t working_set_bytes = 0;   // under run
  size_t predicted_increase_bytes = 0;
  double device_s_per_batch = 0;  // its queue's busy time per batch
  size_t start_reserved_bytes = 0, peak_reserved_bytes = 0;  // the pool's reserved bytes
};

// One rank's figures of a distributed run (--distributed mpi), gathered on
// rank 0: its memory against its own prediction, its throughput and clocks.
struct RankResult {
  int rank = 0;
  double samples_per_s = 0;  // the global batch's samples over this rank's wall time
  double wall_s = 0;
  size_t mem_increase_bytes = 0, predicted_increase_bytes = 0;
  double host_s_per_batch = 0, device_s_per_batch = 0;
};

// What the models (train/predict/predict.h) said of a run, from its measured
// h, d and bytes per batch.
struct RunPrediction {
  size_t increase_bytes = 0;  // the memory model's: peak backlog × bytes per batch (or its bound)
  double wall_s = 0;          // the throughput model's
  int every = 1;              // the synchronization interval the throughput model used
  double fresh_s = 0;         // its fresh-memory term
  double comm_exposed_s = 0;  // --distributed: the reductions' exposed seconds per batch
};

// One epoch of a run with --epochs: its wall time (its first batch queued to
// its last loss read), the tracked memory it added over what was in use as
// it began (bytes in use at its peak row, less the start's), the most the
// pool reserved, and the fresh memory backed in it (the CPU pool's
// counters: the worker's bytes and seconds, the populator's bytes; 0 on a
// GPU), the loss read at its end.
struct EpochResult {
  int epoch = 0;  // 1-based
  int batches = 0;
  double wall_s = 0, samples_per_s = 0;
  size_t mem_increase_bytes = 0, peak_reserved_bytes = 0;
  int peak_backlog_batches = 0;  // the most batches alive at a row of the epoch
  // The throughput model's h and d over the epoch alone (CPU devices: the
  // busiest queue's busy time; 0 where not measured, on a GPU).
  double host_s_per_batch = 0, device_s_per_batch = 0;
  double predicted_samples_per_s = 0;  // the throughput model on them (0 where they were not measured)
  uint64_t fresh_bytes = 0;
  double fresh_worker_s = 0;
  double loss = 0;
};

// What a run measured. Memory figures are the devices' sums (the backlog and
// depth their maxima, d the slowest device's); samples/s counts the whole batch.
struct RunMeasurement {
  std::string device;  // "cpu:0", or "cpu:0,cpu:1" with --devices
  double wall_s = 0, samples_per_s = 0;
  size_t start_bytes = 0, peak_bytes = 0, end_bytes = 0;  // tracked pool, bytes in use
  size_t mem_increase_bytes = 0;                          // peak − start
  size_t start_rss = 0, peak_rss = 0, end_rss = 0;
  size_t rss_increase_bytes = 0;  // peak sampled RSS − start
  uint64_t peak_queue_depth = 0;  // ops queued and not yet launched, at most (QueueStats::peak_unlaunched)
  int peak_backlog_batches = 0;   // most batches alive at once
  size_t peak_backlog_bytes = 0;  // bytes referenced by pending ops (QueueStats)
  size_t bytes_per_batch = 0;
  size_t largest_tensor_bytes = 0;  // one op's largest output (rounded)
  // The `run` model's measurements (train/predict/predict.h).
  size_t data_bytes_per_batch = 0;   // blocks of X and y
  size_t peak_data_ahead_bytes = 0;  // the data queue's peak backlog (0 without it)
  double peak_data_lead_batches = 0; // peak_data_ahead_bytes / data_bytes_per_batch
  size_t working_set_bytes = 0;      // the device queue's peak backlog less the start's bytes
  double final_loss = 0;  // NaN when no batch finished
  // Minor page faults of the process (every thread) over the loop and the
  // final waitall(): in all, per batch (in all / batches, warm-up included),
  // and in steady state: the median of the batches' memory-log rows in the
  // second half (one-time costs there do not count per batch).
  uint64_t minor_faults = 0;
  double minor_faults_per_batch = 0;
  double minor_faults_steady_per_batch = 0;
  RunStatus status = RunStatus::Completed;
  std::string error;
  int interrupt_signal = 0;  // the signal, when interrupted
  int batches_done = 0;      // batches queued (and finished, once the run ended); spec.batches unless it stopped
  size_t memory_limit_bytes = 0;  // the device pool's cap during the run (0 = none)
  std::string memory_limit_source;
  // The throughput model's inputs (train/predict/predict.h): the frontend's
  // (h) and the device's (d) measured seconds per batch, the bytes the pools
  // had to back fresh and what backing a fresh byte costs here (0: not
  // measured, no fresh bytes).
  double host_s_per_batch = 0, device_s_per_batch = 0;
  uint64_t device_allocs = 0;  // calls to the devices' own allocators during the run (cudaMalloc, ...)
  double ops_per_batch = 0;    // ops queued per batch, every device's (the data's draw and the timers included)
  size_t fresh_bytes = 0;
  double fresh_s_per_gib = 0;
  // d per batch taken apart (CPU devices, the busiest device's; d_measured
  // false elsewhere): the kernels' own time (QueueStats::kernel_s) and the
  // worker's time making fresh blocks resident (MemoryStats::fresh),
  // both measured, and the rest of d (the ops' allocation and bookkeeping):
  // d less the two. And the CPU pools' backing counters over the run, the
  // devices' summed (the worker's seconds include the lock and lookups).
  bool d_measured = false;
  double d_kernels_s = 0, d_fresh_s = 0, d_rest_s = 0;
  FreshBacking backing;
  bool fresh_counted = false;  // the fresh term is the worker's measured time, not the probe's price
  std::vector<DeviceResult> per_device;  // one entry per device, in order
  int blas_threads = 0;  // each CPU GEMM's threads with --devices (0: as set)
  // --distributed mpi with more than one rank: every rank's figures (rank 0's
  // result; empty elsewhere and in other runs) and the all-reduce's measured
  // cost (train/predict/predict.h): latency alpha, seconds per byte beta.
  std::vector<RankResult> ranks;
  double comm_alpha_s = 0, comm_beta_s_per_byte = 0;
  StepGraphStats graph;  // --graph on: the first device's step verdicts
  std::vector<EpochResult> epochs;  // with --epochs E > 1: one per epoch that ended
  // Each loss the loop read (batch, mean loss), in order, at most
  // kMaxLossesKept of them (the memory log has every one).
  std::vector<std::pair<int, double>> losses;
  static constexpr size_t kMaxLossesKept = 100000;
};

// One run in three parts: what was asked (the plan's RunSpec), what it
// measured and what the models predicted of it. The summary JSON writes them
// as one flat object (train/report/summary_json.h).
struct RunResult {
  RunSpec asked;
  RunMeasurement measured;
  RunPrediction predicted;

  bool data_parallel() const { return !asked.options.devices.empty(); }
  bool distributed() const { return !measured.ranks.empty() || measured.comm_alpha_s > 0; }
  const std::string& label() const { return asked.label; }
};

// A run that failed: the one-line message, and what was measured up to the
// failure (status Failed), for the summary.
struct RunFailed : Error {
  RunFailed(const std::string& what, RunResult partial_) : Error(what), partial(std::move(partial_)) {}
  RunResult partial;
};

}  // namespace amlp::train
