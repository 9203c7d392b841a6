// memory_log.h — the per-batch CSV (--memory-log): one row per batch, each
// written with one write(2) as it comes (framework/write_file.h RecordFile),
// so a run that fails keeps every row so far, and the file never ends in half
// a row: a write that fails or stops short (a full disk, a file-size limit)
// cuts the file back to its last whole row and fails the run.
//
//   MemoryLog log("out/mem.csv");          // opens (truncates) and writes the header; throws amlp::Error
//   log.write({batch, wall_s, ...});       // one whole row, or amlp::Error and the rows before intact
//
// Columns (docs/cli.md's memory log, plus the backlog):
//   batch,wall_s,queue_depth,bytes_in_use,peak_bytes,reserved_bytes,rss_bytes,loss,backlog_batches,backlog_bytes,minor_faults
// The sample is taken when the batch has been queued, before any
// synchronization; loss is empty when the batch was not synchronized;
// minor_faults are the process's minor page faults since the previous sample
// (for batch 1: since the loop began), every thread.
// With several devices (--devices) the columns above are the devices' sums
// (backlog_batches: their maximum), and each device adds three of its own,
// named after it: queue_depth_cpu0, bytes_in_use_cpu0, backlog_batches_cpu0, ...
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "framework/device.h"
#include "framework/write_file.h"

namespace amlp::train {

// One device's part of a sample, with several devices.
struct DeviceSample {
  uint64_t queue_depth = 0;
  size_t bytes_in_use = 0;
  int backlog_batches = 0;
};

struct BatchSample {
  int batch = 0;             // 1-based
  double wall_s = 0;         // since the loop began
  uint64_t queue_depth = 0;  // ops pushed but not finished
  size_t bytes_in_use = 0;   // tracked pool
  size_t peak_bytes = 0;
  size_t reserved_bytes = 0;
  size_t rss_bytes = 0;        // process resident set
  std::optional<double> loss;  // only when the batch was synchronized
  int backlog_batches = 0;     // batches whose last op has not completed (this one included)
  size_t backlog_bytes = 0;    // bytes referenced by pending ops (QueueStats)
  uint64_t minor_faults = 0;   // process minor page faults since the previous sample
  std::vector<DeviceSample> per_device;  // with several devices, one per device, in order
  int epoch = 0;                         // with --epochs E > 1: the batch's epoch, 1-based (the last column)
};

extern const char* const kMemoryLogHeader;

class MemoryLog {
 public:
  MemoryLog() = default;  // writes nothing
  // `devices`: the per-device columns to add (none for a single device).
  // `epochs`: an `epoch` column last (a run with --epochs E > 1).
  explicit MemoryLog(const std::string& path, const std::vector<Device>& devices = {}, bool epochs = false);

  bool is_open() const { return file_.is_open(); }
  const std::string& path() const { return file_.path(); }
  // One row, whole; throws amlp::Error ("cannot write memory log '...': ...")
  // on a write failure, the file cut back to the rows before.
  void write(const BatchSample& s);

 private:
  RecordFile file_;
};

std::string format_row(const BatchSample& s);  // without the newline
// The header for these devices' columns (kMemoryLogHeader alone for none).
std::string memory_log_header(const std::vector<Device>& devices, bool epochs = false);

}  // namespace amlp::train
