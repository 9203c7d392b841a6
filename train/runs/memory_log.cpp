#include "train/runs/memory_log.h"
#include "train/runs/loop.h"

#include <cstdio>

namespace amlp::train {

const char* const kMemoryLogHeader =
    "batch,wall_s,queue_depth,bytes_in_use,peak_bytes,reserved_bytes,rss_bytes,loss,backlog_batches,backlog_bytes,minor_faults";

std::string memory_log_header(const std::vector<Device>& devices, bool epochs) {
  std::string h = kMemoryLogHeader;
  for (const Device& d : devices) {
    const std::string tag = std::string(d.is_cuda() ? "cuda" : "cpu") + std::to_string(d.index);
    h += ",queue_depth_" + tag + ",bytes_in_use_" + tag + ",backlog_batches_" + tag;
  }
  if (epochs) h += ",epoch";
  return h;
}

MemoryLog::MemoryLog(const std::string& path, const std::vector<Device>& devices, bool epochs)
    : file_(path, "--memory-log") {
  file_.append(memory_log_header(devices, epochs) + "\n");
}

std::string format_row(const BatchSample& s) {
  char loss[48] = "";
  if (s.loss) std::snprintf(loss, sizeof loss, "%.9g", *s.loss);
  char buf[320];
  std::snprintf(buf, sizeof buf, "%d,%.6f,%llu,%zu,%zu,%zu,%zu,%s,%d,%zu,%llu", s.batch, s.wall_s,
                static_cast<unsigned long long>(s.queue_depth), s.bytes_in_use, s.peak_bytes, s.reserved_bytes,
                s.rss_bytes, loss, s.backlog_batches, s.backlog_bytes,
                static_cast<unsigned long long>(s.minor_faults));
  std::string row = buf;
  for (const DeviceSample& d : s.per_device) {
    std::snprintf(buf, sizeof buf, ",%llu,%zu,%d", static_cast<unsigned long long>(d.queue_depth), d.bytes_in_use,
                  d.backlog_batches);
    row += buf;
  }
  if (s.epoch > 0) row += "," + std::to_string(s.epoch);
  return row;
}

void MemoryLog::write(const BatchSample& s) { file_.append(format_row(s) + "\n"); }

namespace {

// --memory-log as a part of the loop: each batch's row once its loss was read
// (if it was); the row of a batch that failed while its loss was read is
// written with the loss empty.
class MemoryLogPart : public LoopPart {
 public:
  explicit MemoryLogPart(Loop& loop)
      : log_(loop.spec.options.memory_log, loop.result.data_parallel() ? loop.devices : std::vector<Device>{},
             loop.spec.options.epochs > 1) {}
  void after_batch(Batch& b) override { log_.write(b.row); }
  void failed(const Batch* b) override {
    if (b && b->reading) log_.write(b->row);
  }

 private:
  MemoryLog log_;
};

}  // namespace

std::unique_ptr<LoopPart> memory_log_part(Loop& loop) {
  if (loop.spec.options.memory_log.empty()) return nullptr;
  return std::make_unique<MemoryLogPart>(loop);
}

}  // namespace amlp::train
