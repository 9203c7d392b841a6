// help_text.cpp — --help's prose and --version's line (help_text.h).
#include "train/options/help_text.h"

#include <sstream>

#include "framework/device.h"
#include "train/options/options.h"
#include "train/options/study_options.h"

namespace amlp::train {

namespace {

const char* const kUsage =
    "Usage: train_mlp [options]\n"
    "Trains the d2l MLP (Dense(h1, relu) -> ... -> Dense(1)) on random data and shows what\n"
    "synchronizing every minibatch trades: memory held by queued work against throughput.\n"
    "Options come from the command line and from an INI file (--config; keys are the long\n"
    "option names, e.g. 'batches = 60'); the command line wins, the file beats the defaults.\n";

const char* const kExit =
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

std::string help_after_models() {
  std::string s;
  for (const StudyOptionsEntry& e : study_options_entries())
    if (e.help) s += e.help;
  return s + kExit;
}

std::string version_text() {
  return std::string("asyncmlp ") + ASYNCMLP_VERSION + " (CUDA backend: " + (built_with_cuda() ? "yes" : "no") + ")\n";
}

}  // namespace amlp::train
