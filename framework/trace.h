// trace.h — Chrome trace-event JSON (Perfetto, chrome://tracing).
//
// When enabled, the frontend's enqueue spans go on one track, each device
// queue's execution spans on a track of their own, and counters record queue
// depth and bytes in use. When disabled, each op pays one relaxed atomic load.
// A program that runs several configurations one after another on the same
// tracks (train_mlp --compare's modes) labels each: its spans carry the label
// in their args ("run": "none").
//
//   trace::start();  ... run ...;  trace::stop_and_write("run.json");
//   trace::set_run_label("none");  // the spans recorded from now on: args {"seq": N, "run": "none"}
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace amlp::trace {

extern std::atomic<bool> g_enabled;
inline bool enabled() { return g_enabled.load(std::memory_order_relaxed); }

uint64_t now_us();                    // steady clock, microseconds since process start
int register_track(const std::string& name);  // a named thread track ("frontend", "queue cpu:0")
int frontend_track();

void start();                         // clears and enables
void span(int track, const char* name, uint64_t begin_us, uint64_t end_us, uint64_t seq = 0);
void counter(const char* name, uint64_t ts_us, double value);
// Labels the spans recorded from now on (until the next call; "": none).
void set_run_label(const std::string& label);
// Disables and writes the file with amlp::write_file (framework/write_file.h);
// throws amlp::Error if it cannot be written. `other_data` goes into the
// format's top-level "otherData" object (how the run ended, and why).
void stop_and_write(const std::string& path,
                    const std::vector<std::pair<std::string, std::string>>& other_data = {});

// RAII span on the frontend track (a training step, a batch).
class Scope {
 public:
  explicit Scope(const char* name) : name_(name), begin_(enabled() ? now_us() : 0) {}
  ~Scope() {
    if (begin_) span(frontend_track(), name_, begin_, now_us());
  }

 private:
  const char* name_;
  uint64_t begin_;
};

}  // namespace amlp::trace
