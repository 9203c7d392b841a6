// demo.h — what async_demo's subcommands share (demo.cpp has the bodies):
// the options and their parsing, timing, the output's lines (a heading, a
// table row, an explanation) and PausedDevice.
//
//   void run_queued(const Options& o) {
//     heading("queued", "...");
//     const auto t0 = Clock::now(); ...; const double t = since(t0);
//     std::printf("  queued after %s\n", human(t, 12).c_str());
//     explain({"what the figure means, in one line"});
//   }
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "framework/asyncmlp.h"

namespace amlp::demo {

// --- options -------------------------------------------------------------------------

struct Options {
  std::string command;
  Device device;
  bool fell_back = false;  // --device auto found no GPU
  int64_t size = 0;        // 0: each subcommand's default, scaled to the device
  int repeats = 0;         // --repeats as given; 0: not given (repeats_or)
  int64_t ops = 10000;     // sync-vs-async's N
};

// One subcommand: its name, its line(s) in --help and the function that runs it.
struct Subcommand {
  const char* name;
  const char* summary;
  void (*run)(const Options&);
};

// Bad command-line input: main prints it as one line and exits 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parses and checks the command line (the subcommand one of `subcommands` or
// "all"). --help prints the usage to stdout and sets *help.
Options parse_options(int argc, char** argv, const std::vector<Subcommand>& subcommands, bool* help);

// --size, or the subcommand's default for a CPU or a GPU.
inline int64_t size_or(const Options& o, int64_t cpu, int64_t cuda) {
  return o.size ? o.size : (o.device.is_cuda() ? cuda : cpu);
}

// --repeats as given, or the subcommand's own default (kRepeats, or more
// where a median needs it).
constexpr int kRepeats = 5;
inline int repeats_or(const Options& o, int dflt = kRepeats) { return o.repeats ? o.repeats : dflt; }

// The subcommands, one file each.
void run_queued(const Options& o);
void run_blockers(const Options& o);
void run_sync_vs_async(const Options& o);
void run_cpu_vs_device(const Options& o);
void run_devices(const Options& o);
void run_data_parallel(const Options& o);

// --- timing: steady_clock; a warm-up first, then medians over --repeats ----------------

using Clock = std::chrono::steady_clock;

inline double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
double median(std::vector<double> v);

// "load average 2.54 on 2 cores": context for timings on a shared machine.
std::string machine_load();

// --- output --------------------------------------------------------------------------

// `s` padded with spaces to `width` characters as shown: right-aligned, or left
// for a negative width. (printf's widths count bytes, and µ or × take two.)
std::string pad(const std::string& s, int width);

// "12.3 ms", "4.56 µs", "1.23 s", padded as pad() does.
std::string human(double seconds, int width = 0);

// "== name: what ==", the line the tests and a reader look for.
void heading(const std::string& name, const std::string& what);

// One table row: "  " and each cell padded to its width, one space apart.
struct Cell {
  std::string text;
  int width;  // as pad()'s
};
void row(const std::vector<Cell>& cells);

// What the figures mean, each line prefixed "   > " so it stands apart from them.
void explain(const std::vector<std::string>& lines);

// --- PausedDevice --------------------------------------------------------------------

// Holds a device's queue paused while it lives: ops pushed meanwhile wait, so
// pushing can be timed apart from running; they start when it goes out of
// scope, an exception included. Synchronous mode (ASYNCMLP_BLOCKING=1) is
// lifted meanwhile: there a push waits for its op, which a paused queue never
// runs.
//
//   { PausedDevice paused(d); /* push: the frontend alone */ }  // the queue runs from here
//   waitall();                                                 // the backend alone
class PausedDevice {
 public:
  explicit PausedDevice(Device d) : pause_(d) {}
  PausedDevice(const PausedDevice&) = delete;
  PausedDevice& operator=(const PausedDevice&) = delete;

 private:
  struct Asynchronous {  // lifted first, restored last
    bool was = blocking();
    Asynchronous() { if (was) set_blocking(false); }
    ~Asynchronous() { if (was) set_blocking(true); }
  } async_;
  QueuePause pause_;
};

}  // namespace amlp::demo
