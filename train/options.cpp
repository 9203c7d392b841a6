#include "train/options.h"

#include <sys/stat.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

#include "framework/error.h"
#include "framework/ops.h"
#include "framework/parse.h"
#include "train/version.h"

namespace po = boost::program_options;

namespace amlp::train {

namespace {

const char* const kUsage =
    "Usage: train_mlp [options]\n"
    "Trains the d2l MLP (Dense(h1, relu) -> ... -> Dense(1)) on random data and shows what\n"
    "synchronizing every minibatch trades: memory held by queued work against throughput.\n"
    "Options come from the command line and from an INI file (--config; keys are the long\n"
    "option names, e.g. 'batches = 60'); the command line wins, the file beats the defaults.\n";

const char* const kMemoryModel =
    "\nMemory model (what the summary's 'predicted' line computes), --alloc enqueue (the default):\n"
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
    "--alloc run (MXNet's delayed allocation): an op's outputs get memory only when the worker\n"
    "  starts it, so queued work holds nothing and the backlog costs no memory:\n"
    "    working set      = the most bytes the device queue's pending ops held in blocks that\n"
    "                       exist (QueueStats: a block counts once allocated), less the bytes in\n"
    "                       use at the start (the parameters): the op running and what the rest\n"
    "                       of its batch still needs\n"
    "    data ahead       = with --data-queue, the data generated but not yet consumed at its\n"
    "                       peak: data bytes per batch (X and y) x peak data lead (batches), the\n"
    "                       most bytes the data queue's outputs held while training ops still\n"
    "                       needed them; 0 without it (each batch's data is made in its turn)\n"
    "    predicted increase = working set + data ahead\n"
    "  --data-queue generates each batch's data on a second queue of the device (a loader\n"
    "  stream); the training ops wait for it through the cross-queue dependencies, so the\n"
    "  data runs ahead of the training while the training holds one batch (CPU devices only).\n"
    "  The summary's 'frontend, device' d is the device queue's busy time (the data queue's\n"
    "  is not included).\n"
    "\nThroughput model (the summary's 'predicted wall' line):\n"
    "    h = the frontend's time per batch: --host-work and queueing the batch (its waits for the\n"
    "        device excluded), d = the device's time per batch: the queue's busy time\n"
    "    synchronizing every K batches, the device runs a group while the frontend queues the\n"
    "    next batches, so  wall = N x max(h, d) + ceil(N/K) x min(h, d):  N x (h + d) for batch,\n"
    "    N x max(h, d) + min(h, d) for none, and for bounded when its bound holds a batch.\n"
    "  Unsynchronized overlaps the two, so the speed-up over batch is at most 2x, at h = d. With\n"
    "  h > d the device finishes each batch before the next is queued: the backlog stays near one\n"
    "  batch in every mode. On a CPU device the frontend's own work (memory it touches) shares\n"
    "  the cores with the device; d on CUDA is the time to launch, not the GPU's.\n"
    "\n--compare runs, back to back on one device with the same seed: batch, none, every=K for\n"
    "  each K in --compare-every, and 'bounded' (none with --max-pending-bytes, by default two\n"
    "  batches' footprint). --sync is ignored; --max-pending/--max-pending-bytes apply to the\n"
    "  bounded mode only. With --memory-log out/mem.csv it writes one log per mode:\n"
    "  out/mem.batch.csv, out/mem.none.csv, out/mem.every2.csv, out/mem.every10.csv,\n"
    "  out/mem.bounded.csv. --summary-json writes one object per mode.\n"
    "\nExit status: 0 done, 1 the run failed (out of memory, a kernel error, a full disk), 2 bad input,\n"
    "  130/143 interrupted by SIGINT/SIGTERM: the first signal stops queueing batches, lets the queues\n"
    "  finish what was queued and writes every output marked interrupted; a second one exits at once\n"
    "  (the memory log keeps its whole rows; no summary or trace).\n";

// --- typed options -------------------------------------------------------------------
//
// Each option is declared once, with its type and the framework/parse.h parser
// that reads and range-checks it. Boost calls the parser when it stores the
// value, from the command line or from the config file, so a bad value is
// caught there and named by its option key.

// A value an option's parser rejected. `problem` follows the option's name:
// " must be an integer in [1, 100000000] (got 0)" or ": unknown device 'tpu' (...)".
struct BadValue {
  std::string key;  // "batches"
  std::string problem;
};

template <class T>
using Parser = std::function<T(const std::string&)>;

// An option's value semantic for Boost: one token, read by `parse` (not by
// boost::lexical_cast, which takes "+5", " 5" and, through strtod, "0x10" and
// "nan"), with a default that the same parser read from its text.
template <class T>
class Parsed : public po::value_semantic_codecvt_helper<char> {
 public:
  Parsed(std::string key, std::string value_name, std::string default_text, Parser<T> parse)
      : key_(std::move(key)),
        value_name_(std::move(value_name)),
        default_text_(std::move(default_text)),
        parse_(std::move(parse)),
        default_(read(default_text_)) {}

  std::string name() const override { return value_name_ + " (=" + default_text_ + ")"; }
  unsigned min_tokens() const override { return 1; }
  unsigned max_tokens() const override { return 1; }
  bool is_composing() const override { return false; }
  bool is_required() const override { return false; }
  bool apply_default(boost::any& store) const override {
    store = default_;
    return true;
  }
  void notify(const boost::any&) const override {}

 protected:
  void xparse(boost::any& store, const std::vector<std::string>& tokens) const override {
    po::validators::check_first_occurrence(store);  // "given more than once"
    store = read(po::validators::get_single_string(tokens));
  }

 private:
  T read(const std::string& text) const {
    try {
      return parse_(text);
    } catch (const ParseError& e) {
      throw BadValue{key_, " " + e.problem()};
    } catch (const Error& e) {  // DeviceError: a whole sentence naming the string
      throw BadValue{key_, std::string(": ") + e.what()};
    }
  }

  std::string key_, value_name_, default_text_;
  Parser<T> parse_;
  T default_;
};

// Declares options on `d`: each with its key, the name of its value in --help,
// its default as text (read by the same parser, so it is valid by
// construction), its parser and its help.
class Declare {
 public:
  explicit Declare(po::options_description& d) : d_(d) {}

  template <class T>
  Declare& option(const char* key, const char* value_name, const char* def, Parser<T> parse, const char* help) {
    d_.add_options()(key, new Parsed<T>(key, value_name, def, std::move(parse)), help);
    return *this;
  }
  Declare& text(const char* key, const char* value_name, const char* def, const char* help) {
    d_.add_options()(key, po::value<std::string>()->default_value(def)->value_name(value_name), help);
    return *this;
  }
  Declare& flag(const char* key, const char* help) {
    d_.add_options()(key, po::bool_switch(), help);
    return *this;
  }

 private:
  po::options_description& d_;
};

// The ranges, named in the messages.
constexpr int64_t kMaxBatches = 100000000;
constexpr int64_t kMaxBatchSize = int64_t(1) << 24;
constexpr int64_t kMaxFeatures = int64_t(1) << 24;
constexpr uint64_t kMaxPendingOps = uint64_t(1) << 40;
constexpr int64_t kMaxCompareEvery = 1000000;

Parser<int> int_in(int64_t min, int64_t max) {
  return [=](const std::string& t) { return static_cast<int>(parse_int(t, "", min, max)); };
}

struct DeviceChoice {
  std::string text;
  Device device;
  bool fell_back = false;
};

DeviceChoice read_device(const std::string& t) {
  DeviceChoice c{t, {}, false};
  c.device = parse_device(t, &c.fell_back);
  return c;
}

struct DevicesChoice {
  std::string text;
  std::vector<Device> devices;
};

// "cpu:0,cpu:1": distinct devices that all_reduce_sum can reduce together
// in this build ("" = not given).
DevicesChoice read_devices(const std::string& t) {
  DevicesChoice c{t, {}};
  if (t.empty()) return c;
  for (std::string_view item : split_list(t)) {
    const std::string name(item);
    if (name.empty() || name == "auto")
      throw ParseError("", "must be a comma-separated list of cpu:N or cuda:N (got " + quote(t) + ")");
    const Device d = parse_device(name);
    for (const Device& seen : c.devices)
      if (seen == d) throw ParseError("", "names " + d.str() + " twice (got " + quote(t) + ")");
    c.devices.push_back(d);
  }
  if (std::string why; !all_reduce_supported(c.devices, &why)) throw ParseError("", "cannot be reduced: " + why);
  return c;
}

float read_lr(const std::string& t) {
  const double v = parse_float(t, "");
  if (!(v > 0) || v > std::numeric_limits<float>::max())
    throw ParseError("", "must be positive and at most 3.4e+38, a float's largest (got " + t + ")");
  return static_cast<float>(v);
}

float read_momentum(const std::string& t) {
  const double v = parse_float(t, "");
  if (v < 0 || v >= 1) throw ParseError("", "must be in [0, 1) (got " + t + ")");
  return static_cast<float>(v);
}

std::vector<int> read_compare_every(const std::string& t) {
  std::vector<int> out;
  for (int64_t k : parse_int_list(t, "", 1, kMaxCompareEvery)) out.push_back(static_cast<int>(k));
  return out;
}

AllocPolicy read_alloc_policy(const std::string& t) {
  if (t == "enqueue") return AllocPolicy::Enqueue;
  if (t == "run") return AllocPolicy::Run;
  throw ParseError("", "must be enqueue or run (got " + quote(t) + ")");
}

size_t read_bytes(const std::string& t) { return static_cast<size_t>(parse_byte_size(t, "", kMaxByteSize)); }

std::optional<size_t> read_memory_limit(const std::string& t) {
  if (t == "auto") return std::nullopt;
  if (t == "none") return size_t(0);
  try {
    return read_bytes(t);
  } catch (const ParseError& e) {  // name the two words too
    rethrow_naming_words(e, "a byte size", "'auto', 'none'");
  }
}

constexpr unsigned kHelpWidth = 100;

po::options_description general_options() {
  po::options_description d("Training options (also INI keys)", kHelpWidth, kHelpWidth / 2);
  // clang-format off
  Declare(d)
    .option<DeviceChoice>("device", "DEV", "auto", read_device,
     "auto|cpu|cpu:N|cuda|cuda:N; auto picks cuda:0 when a GPU is visible, else cpu:0 (and says so)")
    .option<DevicesChoice>("devices", "DEV,DEV,..", "", read_devices,
     "data parallelism: one replica per device (e.g. cpu:0,cpu:1 or cuda:0,cuda:1; replaces --device), "
     "each batch split between them (the first batch-size % n take one row more), the gradients "
     "all-reduced by queued ops (NCCL on GPUs), the same SGD step on every replica")
    .option<SyncMode>("sync", "MODE", "batch", parse_sync_mode,
     "batch: read the loss after every batch (a blocking item()); none: never wait in the loop, "
     "waitall() at the end; every=K: read it after every K-th batch")
    .option<int>("batches", "N", "100", int_in(1, kMaxBatches), "minibatches to train, in [1, 100000000]")
    .option<int>("batch-size", "N", "1024", int_in(1, kMaxBatchSize), "samples per minibatch, in [1, 16777216]")
    .option<int>("features", "N", "512", int_in(1, kMaxFeatures), "input features, in [1, 16777216]")
    .option<models::LayerSpec>("hidden", "W1,W2,..", "2048,512", models::parse_layer_spec,
     "hidden layer widths, comma-separated, each in [1, 1048576], ReLU each; the output layer has 1 unit")
    .option<float>("lr", "X", "0.005", read_lr, "SGD learning rate (> 0)")
    .option<float>("momentum", "X", "0", read_momentum, "SGD momentum, in [0, 1)")
    .option<uint64_t>("seed", "N", "1",
     [](const std::string& t) { return parse_uint(t, "", 0, std::numeric_limits<uint64_t>::max()); },
     "random seed (weights and data; same seed, same numbers in every mode)")
    .option<uint64_t>("max-pending", "OPS", "0",
     [](const std::string& t) { return parse_uint(t, "", 0, kMaxPendingOps); },
     "back-pressure: most ops a queue may hold pending; a push past it blocks (0 = unbounded)")
    .option<size_t>("max-pending-bytes", "BYTES", "0", read_bytes,
     "back-pressure: most bytes the pending ops of a queue may hold, e.g. 256MiB, 1G, 4096 "
     "(0 = unbounded)")
    .option<std::optional<size_t>>("memory-limit", "auto|none|BYTES", "auto", read_memory_limit,
     "cap on the device pool's reserved bytes, e.g. 512MiB; an allocation past it fails the run "
     "with 'out of memory' (exit 1) instead of the OS killing it. auto: on a CPU device the host's "
     "budget (the cgroup's memory limit or MemAvailable at start, whichever is smaller, less 10%), "
     "on a GPU its own memory; none (or 0): no cap")
    .option<HostWork>("host-work", "DURATION|match", "0", parse_host_work,
     "work the frontend does for each batch before queueing it, standing for an input pipeline, "
     "e.g. 2ms, 500us (0 = none); match: as long as the device's work per batch, measured first "
     "over 8 synchronized batches (after 3 to warm up). What asynchrony buys: see 'Throughput model' below")
    .option<HostWorkKind>("host-work-kind", "wait|compute", "wait", parse_host_work_kind,
     "wait: the frontend sleeps, like reading files or waiting on the network (the cores stay free "
     "for the device); compute: it spins on a core, like decoding or augmenting (on a CPU device it "
     "competes with the BLAS threads for the cores)")
    .option<AllocPolicy>("alloc", "enqueue|run", "enqueue", read_alloc_policy,
     "when an op's outputs get memory: enqueue: when it is queued (every pending op holds its "
     "outputs, so unsynchronized memory grows with the backlog); run: when "
     "the device's worker starts it (MXNet's delayed allocation: queued work holds nothing)")
    .flag("data-queue",
     "generate each batch's data on a second queue of the device, a loader stream, which the training "
     "ops wait on; with --alloc run the data runs ahead as in the book's MXNet run (CPU devices only; "
     "default: off)")
    .flag("blocking", "synchronous mode: every push waits for its op (default: off)")
    .flag("tf32", "TF32 tensor-core GEMMs on CUDA; no effect on the CPU (default: off)")
    .flag("check-finite",
     "queue a check that each batch's loss is finite; a failure surfaces at the next blocker "
     "(default: off)")
    .text("memory-log", "FILE.csv", "",
     "one CSV row per batch, flushed per row, sampled when the batch has been queued: batch, "
     "wall_s, queue_depth, bytes_in_use, peak_bytes, reserved_bytes, rss_bytes, loss (empty "
     "when the batch was not synchronized), backlog_batches, backlog_bytes, minor_faults (the "
     "process's minor page faults since the previous row) (default: none)")
    .text("trace", "FILE.json", "",
     "Chrome trace-event JSON for Perfetto / chrome://tracing: enqueue and execution spans, "
     "queue depth and memory counters (default: none)")
    .text("summary-json", "FILE", "", "JSON array, one object per run, for scripts (default: none)")
    .flag("compare", "run every mode back to back and print one table (see below; default: off)")
    .flag("compare-policies",
     "run the allocation policies back to back, unsynchronized (--sync is ignored): --alloc enqueue, "
     "--alloc run, and --alloc run --data-queue (CPU devices), and print one table: memory increase "
     "measured and predicted, samples/s, final loss (default: off)")
    .option<std::vector<int>>("compare-every", "K1,K2,..", "2,10", read_compare_every,
     "the K of the every=K modes --compare runs, each in [1, 1000000]");
  // clang-format on
  return d;
}

po::options_description command_line_only() {
  po::options_description d("Command line only", kHelpWidth, kHelpWidth / 2);
  d.add_options()("help,h", "print this help and exit")("version", "print the version and exit");
  Declare(d).text("config", "FILE.ini", "", "INI file of options; keys are the long names (default: none)");
  return d;
}

po::options_description stray_arguments() {  // hidden: catches words that are not options
  po::options_description d;
  d.add_options()("stray-argument", po::value<std::vector<std::string>>());
  return d;
}

// Reads the values, already parsed and checked when they were stored.
Options to_options(const po::variables_map& vm) {
  auto s = [&](const char* k) { return vm[k].as<std::string>(); };
  Options o;
  o.config = s("config");
  const DeviceChoice& dev = vm["device"].as<DeviceChoice>();
  o.device_text = dev.text;
  o.device = dev.device;
  o.device_fell_back = dev.fell_back;
  const DevicesChoice& devs = vm["devices"].as<DevicesChoice>();
  if (!devs.devices.empty()) {
    o.devices_text = devs.text;
    o.devices = devs.devices;
    o.device = devs.devices[0];
    o.device_text = devs.devices[0].str();
    o.device_fell_back = false;
  }
  o.sync = vm["sync"].as<SyncMode>();
  o.batches = vm["batches"].as<int>();
  o.batch_size = vm["batch-size"].as<int>();
  o.features = vm["features"].as<int>();
  o.hidden = vm["hidden"].as<models::LayerSpec>();
  o.lr = vm["lr"].as<float>();
  o.momentum = vm["momentum"].as<float>();
  o.seed = vm["seed"].as<uint64_t>();
  o.max_pending_ops = vm["max-pending"].as<uint64_t>();
  o.max_pending_bytes = vm["max-pending-bytes"].as<size_t>();
  o.memory_limit = vm["memory-limit"].as<std::optional<size_t>>();
  o.compare_every = vm["compare-every"].as<std::vector<int>>();
  o.blocking = vm["blocking"].as<bool>();
  o.tf32 = vm["tf32"].as<bool>();
  o.check_finite = vm["check-finite"].as<bool>();
  o.alloc = vm["alloc"].as<AllocPolicy>();
  o.data_queue = vm["data-queue"].as<bool>();
  o.host_work = vm["host-work"].as<HostWork>();
  o.host_work.kind = vm["host-work-kind"].as<HostWorkKind>();
  o.compare = vm["compare"].as<bool>();
  o.compare_policies = vm["compare-policies"].as<bool>();
  o.memory_log = s("memory-log");
  o.trace = s("trace");
  o.summary_json = s("summary-json");
  return o;
}

// Boost's own messages quote what was typed as it was typed; an error stays
// one line, and a short one: a quoted value past 64 characters is cut (a
// 5000-character config value used to be echoed whole).
std::string one_line(std::string text) {
  constexpr size_t kMaxQuoted = 64;
  for (size_t open = text.find('\''); open != std::string::npos;) {
    const size_t close = text.find('\'', open + 1);
    if (close == std::string::npos) break;
    if (close - open - 1 > kMaxQuoted) {
      text.replace(open + 1 + kMaxQuoted, close - open - 1 - kMaxQuoted, "...");
      open = text.find('\'', open + 1 + kMaxQuoted + 3 + 1);
    } else {
      open = text.find('\'', close + 1);
    }
  }
  for (size_t i = 0; i < text.size(); ++i)
    if (static_cast<unsigned char>(text[i]) < 0x20) {
      const std::string q = quote(text.substr(i, 1));  // "'\\n'"
      text.replace(i, 1, q.substr(1, q.size() - 2));
    }
  return text;
}

std::string option_error(const po::error& e, const std::string& where) {
  if (auto* u = dynamic_cast<const po::unknown_option*>(&e)) {
    if (where.empty()) return "unknown option " + quote(u->get_option_name()) + " (see --help)";
    return where + ": unknown key " + quote(u->get_option_name()) + " (keys are the long option names; see --help)";
  }
  if (auto* m = dynamic_cast<const po::invalid_command_line_syntax*>(&e)) {
    if (m->kind() == po::invalid_syntax::missing_parameter)
      return "option " + quote(m->get_option_name()) + " needs a value";
  }
  if (auto* m = dynamic_cast<const po::multiple_occurrences*>(&e))
    return (where.empty() ? "" : where + ": ") + "option " + quote(m->get_option_name()) + " given more than once";
  return one_line(where.empty() ? e.what() : where + ": " + e.what());
}

}  // namespace

std::vector<Device> run_devices(const RunSettings& s) {
  return s.devices.empty() ? std::vector<Device>{s.device} : s.devices;
}

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

std::vector<PolicyMode> policy_modes(const Options& o) {
  // On a GPU a block is reused as soon as its last op is launched (the
  // stream orders the rest): allocating at launch as well is what PyTorch's
  // caching allocator does, with no queue in front of the stream.
  const bool cuda = run_devices(o).front().is_cuda();
  std::vector<PolicyMode> modes{
      {AllocPolicy::Enqueue, false, "enqueue", "queued ops own their outputs"},
      {AllocPolicy::Run, false, "run", cuda ? "PyTorch's caching allocator" : "MXNet's engine, delayed alloc"}};
  if (!cuda) modes.push_back({AllocPolicy::Run, true, "run+data", "MXNet, data ops running ahead"});
  return modes;
}

std::vector<OutputFile> output_files(const Options& o) {
  std::vector<OutputFile> files;
  if (!o.memory_log.empty()) {
    if (o.compare)
      for (const CompareMode& m : compare_modes(o)) files.push_back({"memory-log", tagged_path(o.memory_log, m.tag)});
    else if (o.compare_policies)
      for (const PolicyMode& m : policy_modes(o)) files.push_back({"memory-log", tagged_path(o.memory_log, m.tag)});
    else
      files.push_back({"memory-log", o.memory_log});
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
  po::parsed_options parsed(&accepted);
  try {
    const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    parsed = po::command_line_parser(args).options(accepted).style(style).positional(stray).run();
  } catch (const po::error& e) {
    return fail(option_error(e, ""));
  }
  // --help and --version win over any value: they are answered before a value is read.
  for (const po::option& opt : parsed.options) {
    if (opt.string_key == "help") {
      std::ostringstream s;
      s << kUsage << "\n" << cmdline << kMemoryModel;
      out.status = ParseStatus::Exit;
      out.message = s.str();
      return out;
    }
  }
  for (const po::option& opt : parsed.options) {
    if (opt.string_key == "version") {
      out.status = ParseStatus::Exit;
      out.message = version_string() + "\n";
      return out;
    }
  }
  po::variables_map vm;
  try {
    po::store(parsed, vm);
  } catch (const BadValue& e) {
    return fail("--" + e.key + e.problem);
  } catch (const po::error& e) {
    return fail(option_error(e, ""));
  }
  if (vm.count("stray-argument"))
    return fail("unexpected argument " + quote(vm["stray-argument"].as<std::vector<std::string>>()[0]) +
                " (options start with --; see --help)");
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
      const po::parsed_options from_file = po::parse_config_file(in, general, /*allow_unregistered=*/false);
      // Checked here, not by store(): store() skips keys the command line set.
      std::set<std::string> seen;
      for (const po::option& opt : from_file.options)
        if (!seen.insert(opt.string_key).second)
          return fail(config + ": key '" + opt.string_key + "' is given more than once");
      po::store(from_file, vm);  // keys the command line set are not read: the command line wins
    } catch (const BadValue& e) {
      return fail("'" + e.key + "' in " + config + e.problem);
    } catch (const po::error& e) {
      return fail(option_error(e, config));
    }
  }
  try {
    po::notify(vm);
    out.options = to_options(vm);
  } catch (const po::error& e) {
    return fail(option_error(e, ""));
  }
  if (out.options.compare && out.options.compare_policies)
    return fail("--compare and --compare-policies each print a table of their own: choose one");
  if (out.options.devices.size() > static_cast<size_t>(out.options.batch_size))
    return fail("--devices: " + std::to_string(out.options.devices.size()) + " devices cannot split a batch of " +
                std::to_string(out.options.batch_size) + " (--batch-size): each needs at least one row");
  for (const Device& d : out.options.devices)
    if (out.options.data_queue && d.is_cuda())
      return fail("--data-queue needs CPU devices: on " + d.str() +
                  " every kernel launches onto the device's one stream (use --devices cpu:0,cpu:1)");
  if (out.options.data_queue && out.options.device.is_cuda())
    return fail("--data-queue needs a CPU device: on " + out.options.device.str() +
                " every kernel launches onto the device's one stream (use --device cpu)");
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
