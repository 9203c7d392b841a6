// live_status.h — the run-ahead as it happens: one status line on stderr,
// drawn by a thread of its own so the training loop only publishes a count.
// On a terminal it is redrawn in place (\r) a few times a second and cleared
// when the run ends; otherwise it is printed as a whole line every
// --status-every seconds. --quiet: none. The loop's share is a lock and a
// push per batch (~8 ns on the 2-core CI VM, against quick.ini's ~3 ms
// batch); a draw reads each device's statistics and writes one line (~1.5 µs
// before the write), 4 times a second on a terminal.
//
//   LiveStatus live(spec, devices, budget_bytes, start_bytes);   // starts the clock and the thread
//   live.batch_queued(batch, last_seq, bytes_per_batch);          // after each batch is queued
//   live.clear();                                                 // before printing to the same terminal
//
//   none: 37/100 batches queued, 12 finished | backlog 25 batches, 95.3 MB | memory +120.1 MB
//   (predicted 95.0 MB, budget 7200.0 MB) | 4470 samples/s
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "framework/device.h"
#include "train/plan/run_result.h"

namespace amlp::train {

// What the line shows; figures() reads them, line() formats them.
struct LiveFigures {
  std::string label;
  int queued = 0, finished = 0, batches = 0;  // batches: in all (every epoch's)
  int epoch = 0, epochs = 1;                  // --epochs: the epoch being queued, of how many
  int backlog_batches = 0;
  size_t backlog_bytes = 0;
  size_t in_use_bytes = 0;     // above the run's start
  size_t predicted_bytes = 0;  // the memory model on the backlog now (0: not yet known)
  size_t budget_bytes = 0;     // 0: none
  double samples_per_s = 0;    // finished batches' samples over the time since the start
};
std::string live_line(const LiveFigures& f);

class LiveStatus {
 public:
  // Nothing is drawn (and no thread started) when spec.quiet.
  LiveStatus(const RunSpec& spec, const std::vector<Device>& devices, size_t budget_bytes, size_t start_bytes);
  ~LiveStatus();  // stops the thread; clears the line on a terminal
  LiveStatus(const LiveStatus&) = delete;
  LiveStatus& operator=(const LiveStatus&) = delete;

  // Batch `batch` is queued; its last op on the first device is `last_seq`.
  void batch_queued(int batch, uint64_t last_seq, size_t bytes_per_batch);
  // Erases the line on a terminal (it is drawn again at the next tick).
  void clear();

 private:
  LiveFigures figures();
  void draw();
  void loop();

  RunSpec spec_;
  std::vector<Device> devices_;
  size_t budget_ = 0, start_bytes_ = 0;
  bool terminal_ = false;
  std::chrono::steady_clock::time_point t0_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false, shown_ = false;
  int queued_ = 0;
  size_t bytes_per_batch_ = 0;
  std::vector<uint64_t> last_seq_;
  std::thread thread_;
};

}  // namespace amlp::train
