#include "train/options.h"

#include <sys/stat.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "framework/error.h"
#include "train/byte_size.h"
#include "train/version.h"

namespace po = boost::program_options;

namespace amlp::train {

namespace {

// A bad value: the message is the whole error line (without the program prefix).
struct BadInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const char* const kUsage =
    "Usage: train_mlp [options]\n"
    "Trains the d2l MLP (Dense(h1, relu) -> ... -> Dense(1)) on random data and shows what\n"
    "synchronizing every minibatch trades: memory held by queued work against throughput.\n"
    "Options come from the command line and from an INI file (--config; keys are the long\n"
    "option names, e.g. 'batches = 60'); the command line wins, the file beats the defaults.\n";

const char* const kMemoryModel =
    "\nMemory model (what the summary's 'predicted' line computes):\n"
    "  Every queued op holds its outputs (and its inputs) until it has run, so the memory a\n"
    "  run holds is what its pending batches hold.\n"
    "    bytes per batch  = bytes the frontend allocates for one batch: data generation,\n"
    "                       forward, loss, backward, SGD step (the change in the pool's\n"
    "                       bytes_allocated_total across the batch; gradients are released\n"
    "                       after each step, so a finished batch keeps nothing)\n"
    "    backlog          = batches alive: those whose last op has not completed, plus the\n"
    "                       one being queued (a synchronized run has a backlog of 1)\n"
    "    predicted increase = peak backlog x bytes per batch; with --max-pending-bytes B,\n"
    "                       at most B + one op's largest output\n"
    "  Freed memory returns to the pool as the worker finishes ops, so this is an upper\n"
    "  bound, exact when the backlog is work not yet started (the unsynchronized run).\n"
    "  Memory increase is the peak of tracked bytes in use during the run minus the bytes in\n"
    "  use at its start (after the model is initialised); the RSS increase likewise from the\n"
    "  process's resident set (sampled every batch and after waitall).\n"
    "\n--compare runs, back to back on one device with the same seed: batch, none, every=K for\n"
    "  each K in --compare-every, and 'bounded' (none with --max-pending-bytes, by default two\n"
    "  batches' footprint). --sync is ignored; --max-pending/--max-pending-bytes apply to the\n"
    "  bounded mode only. With --memory-log out/mem.csv it writes one log per mode:\n"
    "  out/mem.batch.csv, out/mem.none.csv, out/mem.every2.csv, out/mem.every10.csv,\n"
    "  out/mem.bounded.csv. --summary-json writes one object per mode.\n"
    "\nExit status: 0 done, 1 the run failed (out of memory, a kernel error), 2 bad input.\n";

// A string-valued option with its default shown in --help and a name for its value.
po::typed_value<std::string>* arg(const char* value_name, const char* def) {
  return po::value<std::string>()->default_value(def)->value_name(value_name);
}

constexpr unsigned kHelpWidth = 100;

po::options_description general_options() {
  po::options_description d("Training options (also INI keys)", kHelpWidth, kHelpWidth / 2);
  // clang-format off
  d.add_options()
    ("device", arg("DEV", "auto"),
     "auto|cpu|cpu:N|cuda|cuda:N; auto picks cuda:0 when a GPU is visible, else cpu:0 (and says so)")
    ("sync", arg("MODE", "batch"),
     "batch: read the loss after every batch (a blocking item()); none: never wait in the loop, "
     "waitall() at the end; every=K: read it after every K-th batch")
    ("batches", arg("N", "100"), "minibatches to train (> 0)")
    ("batch-size", arg("N", "1024"), "samples per minibatch (> 0)")
    ("features", arg("N", "512"), "input features (> 0)")
    ("hidden", arg("W1,W2,..", "2048,512"),
     "hidden layer widths, comma-separated, ReLU each; the output layer has 1 unit")
    ("lr", arg("X", "0.005"), "SGD learning rate (> 0)")
    ("momentum", arg("X", "0"), "SGD momentum, in [0, 1)")
    ("seed", arg("N", "1"), "random seed (weights and data; same seed, same numbers in every mode)")
    ("max-pending", arg("OPS", "0"),
     "back-pressure: most ops a queue may hold pending; a push past it blocks (0 = unbounded)")
    ("max-pending-bytes", arg("BYTES", "0"),
     "back-pressure: most bytes the pending ops of a queue may hold, e.g. 256MiB, 1G, 4096 "
     "(0 = unbounded)")
    ("memory-limit", arg("BYTES", "0"),
     "cap on the device pool's reserved bytes, e.g. 512MiB; an allocation past it fails with "
     "'out of memory' (0 = none)")
    ("blocking", po::bool_switch(), "synchronous mode: every push waits for its op (default: off)")
    ("tf32", po::bool_switch(), "TF32 tensor-core GEMMs on CUDA; no effect on the CPU (default: off)")
    ("check-finite", po::bool_switch(),
     "queue a check that each batch's loss is finite; a failure surfaces at the next blocker "
     "(default: off)")
    ("memory-log", arg("FILE.csv", ""),
     "one CSV row per batch, flushed per row, sampled when the batch has been queued: batch, "
     "wall_s, queue_depth, bytes_in_use, peak_bytes, reserved_bytes, rss_bytes, loss (empty "
     "when the batch was not synchronized), backlog_batches, backlog_bytes (default: none)")
    ("trace", arg("FILE.json", ""),
     "Chrome trace-event JSON for Perfetto / chrome://tracing: enqueue and execution spans, "
     "queue depth and memory counters (default: none)")
    ("summary-json", arg("FILE", ""), "JSON array, one object per run, for scripts (default: none)")
    ("compare", po::bool_switch(),
     "run every mode back to back and print one table (see below; default: off)")
    ("compare-every", arg("K1,K2,..", "2,10"), "the K of the every=K modes --compare runs");
  // clang-format on
  return d;
}

po::options_description command_line_only() {
  po::options_description d("Command line only", kHelpWidth, kHelpWidth / 2);
  d.add_options()("help,h", "print this help and exit")("version", "print the version and exit")(
      "config", arg("FILE.ini", ""), "INI file of options; keys are the long names (default: none)");
  return d;
}

po::options_description stray_arguments() {  // hidden: catches words that are not options
  po::options_description d;
  d.add_options()("stray-argument", po::value<std::vector<std::string>>());
  return d;
}

// `name` is how the error names the option: "--batches", or "'batches' in x.ini".
int64_t to_int(const std::string& name, const std::string& text, int64_t lo, int64_t hi, const char* what) {
  errno = 0;
  char* end = nullptr;
  long long v = text.empty() ? 0 : std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || errno || !end || *end) throw BadInput(name + " must be " + what + " (got '" + text + "')");
  if (v < lo || v > hi) throw BadInput(name + " must be " + what + " (got " + text + ")");
  return v;
}

double to_double(const std::string& name, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  double v = text.empty() ? 0 : std::strtod(text.c_str(), &end);
  if (text.empty() || errno || !end || *end || !std::isfinite(v))
    throw BadInput(name + " must be a number (got '" + text + "')");
  return v;
}

size_t to_bytes(const std::string& name, const std::string& text) {
  try {
    return parse_byte_size(text);
  } catch (const std::invalid_argument& e) {
    throw BadInput(name + ": " + e.what());
  }
}

std::vector<int> to_int_list(const std::string& name, const std::string& text) {
  std::vector<int> out;
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    out.push_back(static_cast<int>(to_int(name, item, 1, 1000000, "a comma-separated list of positive integers")));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// Reads the validated values out of the variables map.
Options to_options(const po::variables_map& vm, const std::set<std::string>& from_config) {
  auto s = [&](const char* k) { return vm[k].as<std::string>(); };
  auto n = [&](const std::string& k) { return from_config.count(k) ? "'" + k + "' in " + s("config") : "--" + k; };
  Options o;
  o.config = s("config");
  o.batches = static_cast<int>(to_int(n("batches"), s("batches"), 1, 100000000, "a positive integer"));
  o.batch_size = static_cast<int>(to_int(n("batch-size"), s("batch-size"), 1, 1 << 24, "a positive integer"));
  o.features = static_cast<int>(to_int(n("features"), s("features"), 1, 1 << 24, "a positive integer"));
  try {
    o.hidden = models::parse_layer_spec(s("hidden"));
  } catch (const Error& e) {
    throw BadInput(n("hidden") + ": " + e.what());
  }
  o.lr = static_cast<float>(to_double(n("lr"), s("lr")));
  if (!(o.lr > 0.f)) throw BadInput(n("lr") + " must be positive (got " + s("lr") + ")");
  o.momentum = static_cast<float>(to_double(n("momentum"), s("momentum")));
  if (o.momentum < 0.f || o.momentum >= 1.f)
    throw BadInput(n("momentum") + " must be in [0, 1) (got " + s("momentum") + ")");
  {
    const std::string t = s("seed");
    errno = 0;
    char* end = nullptr;
    unsigned long long v = t.empty() || t[0] == '-' ? 0 : std::strtoull(t.c_str(), &end, 10);
    if (t.empty() || t[0] == '-' || errno || !end || *end)
      throw BadInput(n("seed") + " must be a non-negative integer (got '" + t + "')");
    o.seed = v;
  }
  o.max_pending_ops =
      static_cast<uint64_t>(to_int(n("max-pending"), s("max-pending"), 0, int64_t(1) << 40, "a non-negative integer"));
  o.max_pending_bytes = to_bytes(n("max-pending-bytes"), s("max-pending-bytes"));
  o.memory_limit = to_bytes(n("memory-limit"), s("memory-limit"));
  try {
    o.sync = parse_sync_mode(s("sync"));
  } catch (const std::invalid_argument& e) {
    throw BadInput(n("sync") + " " + e.what());
  }
  o.compare_every = to_int_list(n("compare-every"), s("compare-every"));
  o.blocking = vm["blocking"].as<bool>();
  o.tf32 = vm["tf32"].as<bool>();
  o.check_finite = vm["check-finite"].as<bool>();
  o.compare = vm["compare"].as<bool>();
  o.memory_log = s("memory-log");
  o.trace = s("trace");
  o.summary_json = s("summary-json");
  o.device_text = s("device");
  try {
    o.device = parse_device(o.device_text, &o.device_fell_back);
  } catch (const Error& e) {
    throw BadInput(n("device") + ": " + e.what());
  }
  return o;
}

std::string option_error(const po::error& e, const std::string& where) {
  if (auto* u = dynamic_cast<const po::unknown_option*>(&e)) {
    if (where.empty()) return "unknown option '" + u->get_option_name() + "' (see --help)";
    std::string key = u->get_option_name();
    return where + ": unknown key '" + key + "' (keys are the long option names; see --help)";
  }
  if (auto* m = dynamic_cast<const po::invalid_command_line_syntax*>(&e)) {
    if (m->kind() == po::invalid_syntax::missing_parameter)
      return "option '" + m->get_option_name() + "' needs a value";
  }
  if (auto* m = dynamic_cast<const po::multiple_occurrences*>(&e))
    return (where.empty() ? "" : where + ": ") + "option '" + m->get_option_name() + "' given more than once";
  std::string what = e.what();
  return where.empty() ? what : where + ": " + what;
}

}  // namespace

std::string tagged_path(const std::string& path, const std::string& tag) {
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == slash + 1)
    return path + "." + tag;
  return path.substr(0, dot) + "." + tag + path.substr(dot);
}

std::vector<CompareMode> compare_modes(const Options& o) {
  std::vector<SyncMode> syncs{{SyncPolicy::EveryBatch, 1}, {SyncPolicy::Never, 0}};
  for (int k : o.compare_every) syncs.push_back({SyncPolicy::EveryK, k});
  std::vector<CompareMode> modes;
  for (const SyncMode& m : syncs) modes.push_back({m, /*bounded=*/false, file_tag(m)});
  modes.push_back({{SyncPolicy::Never, 0}, /*bounded=*/true, "bounded"});
  return modes;
}

std::vector<OutputFile> output_files(const Options& o) {
  std::vector<OutputFile> files;
  if (!o.memory_log.empty()) {
    if (!o.compare)
      files.push_back({"memory-log", o.memory_log});
    else
      for (const CompareMode& m : compare_modes(o)) files.push_back({"memory-log", tagged_path(o.memory_log, m.tag)});
  }
  if (!o.trace.empty()) files.push_back({"trace", o.trace});
  if (!o.summary_json.empty()) files.push_back({"summary-json", o.summary_json});
  return files;
}

std::string output_path_problem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return "it is a directory";
    if (::access(path.c_str(), W_OK) != 0) return std::strerror(errno);
    return "";
  }
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  if (::stat(dir.c_str(), &st) != 0) return "directory '" + dir + "' does not exist";
  if (!S_ISDIR(st.st_mode)) return "'" + dir + "' is not a directory";
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return "directory '" + dir + "': " + std::strerror(errno);
  return "";
}

ParseOutcome parse_options(const std::vector<std::string>& args) {
  ParseOutcome out;
  const auto fail = [&](const std::string& msg) {
    out.status = ParseStatus::Error;
    out.exit_code = kExitBadInput;
    out.message = msg;
    return out;
  };
  po::options_description general = general_options();
  po::options_description cmdline(kHelpWidth, kHelpWidth / 2);
  cmdline.add(command_line_only()).add(general);
  po::options_description accepted;
  accepted.add(cmdline).add(stray_arguments());
  po::positional_options_description stray;
  stray.add("stray-argument", -1);
  po::variables_map vm;
  try {
    const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    po::store(po::command_line_parser(args).options(accepted).style(style).positional(stray).run(), vm);
  } catch (const po::error& e) {
    return fail(option_error(e, ""));
  }
  if (vm.count("stray-argument"))
    return fail("unexpected argument '" + vm["stray-argument"].as<std::vector<std::string>>()[0] +
                "' (options start with --; see --help)");
  std::set<std::string> on_command_line;
  for (const auto& kv : vm)
    if (!kv.second.defaulted()) on_command_line.insert(kv.first);
  if (vm.count("help")) {
    std::ostringstream s;
    s << kUsage << "\n" << cmdline << kMemoryModel;
    out.status = ParseStatus::Exit;
    out.message = s.str();
    return out;
  }
  if (vm.count("version")) {
    out.status = ParseStatus::Exit;
    out.message = version_string() + "\n";
    return out;
  }
  const std::string config = vm["config"].as<std::string>();
  if (!config.empty()) {
    struct stat st {};
    if (::stat(config.c_str(), &st) != 0)
      return fail("cannot read config file '" + config + "': " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) return fail("cannot read config file '" + config + "': it is a directory");
    std::ifstream in(config);
    if (!in || ::access(config.c_str(), R_OK) != 0)
      return fail("cannot read config file '" + config + "': " + std::strerror(errno ? errno : EACCES));
    try {
      po::store(po::parse_config_file(in, general, /*allow_unregistered=*/false), vm);
    } catch (const po::error& e) {
      return fail(option_error(e, config));
    }
  }
  try {
    po::notify(vm);
    std::set<std::string> from_config;
    for (const auto& kv : vm)
      if (!kv.second.defaulted() && !on_command_line.count(kv.first)) from_config.insert(kv.first);
    out.options = to_options(vm, from_config);
  } catch (const BadInput& e) {
    return fail(e.what());
  } catch (const po::error& e) {
    return fail(option_error(e, ""));
  }
  for (const OutputFile& f : output_files(out.options)) {
    std::string why = output_path_problem(f.path);
    if (!why.empty()) return fail("--" + f.option + ": cannot write '" + f.path + "': " + why);
  }
  return out;
}

ParseOutcome parse_options(int argc, const char* const argv[]) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return parse_options(args);
}

}  // namespace amlp::train
