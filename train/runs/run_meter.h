// run_meter.h — everything train_mlp measures during a run: the backlog, the
// memory, the page faults, the frontend's and the devices' clocks. One
// statistics snapshot per device per phase of a batch (its start, and once it
// is queued), so reading them costs the loop two visits to each queue.
//
//   RunMeter meter(r, devices);          // r: the RunResult it fills
//   meter.start();                       // bytes in use, RSS, faults, the queues' clocks
//   for (batch ...) {
//     meter.before_batch();              // the backlog's peak (it only rises as a batch starts)
//     ... queue the batch ...
//     meter.after_step();                // CUDA: the batch's device timer
//     BatchSample row = meter.after_queue(batch);   // the memory-log row
//     ... optionally read the loss (meter.waited(seconds)) ...
//   }
//   meter.loop_ended(); waitall(); meter.finish();  // the summary's figures, the models' predictions
#pragma once
#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "framework/asyncmlp.h"
#include "train/runs/memory_log.h"
#include "train/plan/run_result.h"

namespace amlp::train {

// Batches whose last op has not completed: seq of each batch's last op,
// compared with the queue's completed count (monotone, so a moving cursor).
class BacklogCounter {
 public:
  void batch_queued(uint64_t last_seq) { last_.push_back(last_seq); }
  // Batches with an op past `done` (the queue's completed or launched count).
  int pending(uint64_t done) const;
  // The batch (1-based) that queued op `seq`, or 0 if it came after the last one.
  int batch_of(uint64_t seq) const;

 private:
  std::vector<uint64_t> last_;
};

class RunMeter {
 public:
  using Clock = std::chrono::steady_clock;

  RunMeter(RunResult& r, const std::vector<Device>& devices);
  RunMeter(const RunMeter&) = delete;
  RunMeter& operator=(const RunMeter&) = delete;

  // The loop starts now: bytes in use, RSS, faults, the queues' clocks.
  void start();
  // A batch starts: closes the previous batch's allocations and samples the
  // batches alive (the backlog only rises here, so its peak is seen here).
  void before_batch();
  // The batch's ops are queued (CUDA: marks the end of its device timer).
  void after_step();
  // The batch is queued and nothing has waited for it: its memory-log row.
  BatchSample after_queue(int batch);
  // Seconds the loop spent blocked reading the loss.
  void waited(double s) { waited_s_ += s; }
  // The loop ended after a whole batch (the last, or an interrupted run's).
  void loop_ended();
  // Fills the run's figures and the models' predictions from its start to
  // now (also for a run that stopped), `wall_s` its wall time; call after the final waitall().
  void finish(double wall_s);

  double seconds() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }
  // The batch (1-based) that queued op `seq` on `device`, or 0.
  int batch_of(const std::string& device, uint64_t seq) const;
  // The last op of the batch after_queue() sampled, on the first device.
  uint64_t last_queued_seq() const { return last_seq_; }
  // The devices' bytes in use now.
  size_t bytes_in_use() const;
  // The current largest bytes per batch (the model's; 0 before a batch ended).
  size_t bytes_per_batch() const;

 private:
  // The loop's view of one device: its backlog and its clocks at the start.
  struct Track {
    Device device;
    BacklogCounter backlog;
    double busy0 = 0, held0 = 0;
    uint64_t allocated0 = 0;      // bytes_allocated_total at the loop's start
    uint64_t device_allocs0 = 0;  // the device's allocator calls at the loop's start
    uint64_t batch_allocated = 0; // ... at the current batch's start
    size_t reserved0 = 0, peak_reserved = 0;
    // On a GPU the queue's busy time is the time to *launch* the kernels; the
    // device's own time per batch comes from a timer before and after each
    // batch's ops (CUDA events), read as the GPU passes them.
    std::deque<std::pair<DeviceTimer, DeviceTimer>> open_timers;
    double timed_s = 0;
    int timed_batches = 0;
    uint64_t pushed0 = 0;  // ops queued on the device before the loop
    double kernel0 = 0;    // QueueStats::kernel_s at the loop's start
    FreshBacking fresh0;   // the pool's fresh-memory counters at the loop's start
    void read_timers(bool wait);
  };

  void close_batch(size_t i, const MemoryStats& m);
  // finish() in three steps: each device's figures and the run's sums and
  // maxima; the models' predictions from them; the page faults.
  struct DeviceTotals {
    double held_s = 0, busy_max = 0;  // back-pressure's hold, all devices; the busiest queue's busy time per batch
    size_t busiest = 0;               // its index
    std::vector<double> kernels_s;    // each device's kernel time over the run
    std::vector<FreshBacking> fresh;  // each pool's fresh-memory counters' deltas over the run
  };
  DeviceTotals measure_devices();
  void predict(const DeviceTotals& totals, double wall_s);
  void count_faults();
  // d per batch taken apart, and the backing counters over the run (finish()).
  void decompose_d(const std::vector<double>& kernels_s, const std::vector<FreshBacking>& fresh, size_t busiest);

  RunResult& r_;
  RunMeasurement& m_;  // r_.measured
  std::vector<Track> tracks_;
  Clock::time_point t0_ = Clock::now();
  double waited_s_ = 0;  // in the loop's blocking item() reads
  double loop_s_ = -1;   // the loop's wall time once it ended (-1: it did not)
  bool batch_open_ = false;
  uint64_t last_seq_ = 0;
  // Minor page faults: at the start, before the last row, and each row after
  // the steady-state window starts (the second half).
  uint64_t faults0_ = 0, faults_before_ = 0;
  std::vector<uint64_t> late_rows_;
};

}  // namespace amlp::train
