// help_text.cpp — --help's prose and --version's line (help_text.h).
#include "train/options/help_text.h"

#include <sstream>

#include "framework/device.h"
#include "train/options/options.h"

namespace amlp::train {

namespace {

const char* const kUsage =
    "Usage: train_mlp [options]\n"
    "Trains the d2l MLP (Dense(h1, relu) -> ... -> Dense(1)) on random data and shows what\n"
    "synchronizing every minibatch trades: memory held by queued work against throughput.\n"
    "Options come from the command line and from an INI file (--config; keys are the long\n"
    "option names, e.g. 'batches = 60'); the command line wins, the file beats the defaults.\n";

const char* const kCompareAndExit =
    "\n--compare runs, back to back on one device with the same seed: batch, none, every=K for\n"
    "  each K in --compare-every, and 'bounded' (none with --max-pending-bytes, by default two\n"
    "  batches' footprint). --sync is ignored; --max-pending/--max-pending-bytes apply to the\n"
    "  bounded mode only. With --memory-log out/mem.csv it writes one log per mode:\n"
    "  out/mem.batch.csv, out/mem.none.csv, out/mem.every2.csv, out/mem.every10.csv,\n"
    "  out/mem.bounded.csv. --summary-json writes one object per mode.\n"
    "\n--sweep first measures d, the device's time per batch, and h0, the frontend's with no host work,\n"
    "  over 16 synchronized batches (the quickest of 3), then runs --compare's modes at each fraction f\n"
    "  of --sweep-fractions with the frontend's time per batch h = f x d: the host work\n"
    "  (--host-work-kind) is timed alone, then in 16 synchronized batches, and corrected by the miss\n"
    "  (at most 2 x h0 or f x d / 4). One table: per (f, mode) samples/s, speed-up over batch, peak\n"
    "  backlog and memory increase, each beside the models' predictions. --memory-log out/mem.csv\n"
    "  writes out/mem.h0.5d.none.csv ...;\n"
    "  --summary-json writes {\"runs\": [...], \"sweep\": [one row per (f, mode)], \"sweep_model\": {the\n"
    "  models' curves over h/d}} (tools/plot_sweep.py draws it).\n"
    "\nExit status: 0 done, 1 the run failed (out of memory, a kernel error, a full disk, stdout or an\n"
    "  output that cannot be written), 2 bad input, 130/143/129 interrupted by SIGINT/SIGTERM/SIGHUP:\n"
    "  the first signal stops queueing batches (and cuts host work short), lets the queues finish what\n"
    "  was queued and writes every output marked interrupted; a second one, half a second or more\n"
    "  later, exits at once (the memory log keeps its whole rows; no summary or trace; a temporary being\n"
    "  written is removed).\n";

}  // namespace

std::string help_text(const po::options_description& tables) {
  std::ostringstream s;
  s << kUsage << "\n" << tables;
  return s.str();
}

std::string help_after_models() { return kCompareAndExit; }

std::string version_text() {
  return std::string("asyncmlp ") + ASYNCMLP_VERSION + " (CUDA backend: " + (built_with_cuda() ? "yes" : "no") + ")\n";
}

}  // namespace amlp::train
