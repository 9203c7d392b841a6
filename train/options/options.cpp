#include "train/options/options.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "framework/error.h"
#include "framework/device.h"
#include "framework/nn/sgd.h"
#include "framework/ops.h"
#include "framework/parse.h"
#include "framework/process_group.h"
#include "framework/runtime.h"
#include "framework/read_input.h"
#include "train/options/file_options.h"
#include "train/options/npy_file.h"
#include "train/options/program_options.h"
#include "train/options/study_options.h"

namespace amlp::train {

namespace {

// The ranges, named in the messages.
constexpr int64_t kMaxBatches = 100000000;
constexpr int64_t kMaxBatchSize = int64_t(1) << 24;
constexpr int64_t kMaxFeatures = int64_t(1) << 24;
constexpr uint64_t kMaxPendingOps = uint64_t(1) << 40;
constexpr double kMaxStatusEvery_s = 86400;

}  // namespace

SyncChoice parse_sync_choice(const std::string& text) {
  if (text == "auto") return {SyncMode{SyncPolicy::EveryBatch, 1}, true};
  try {
    return {parse_sync_mode(text), false};
  } catch (const ParseError&) {  // the option's own name, and auto beside the modes
    throw ParseError("", "must be auto, batch, none or every=K with K in [1, " + std::to_string(kMaxSyncEvery) +
                             "] (got " + quote(text) + ")");
  }
}

namespace {

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

// ", which is 0 as a float" where the float SGD is given is not the value written.
std::string as_float(double v, float f) {
  if (static_cast<double>(f) == v) return "";
  char t[48];
  std::snprintf(t, sizeof t, ", which is %.9g as a float", static_cast<double>(f));
  return t;
}

// --lr and --momentum: checked as the floats SGD will take, by SGD's own
// check (sgd_settings_problem), so a value SGD would refuse at run time
// (1e-46 rounds to 0, 0.99999999999 to 1) is refused here, naming the option.
float read_lr(const std::string& t) {
  const double v = parse_float(t, "");
  const bool fits = v > 0 && v <= std::numeric_limits<float>::max();
  if (!fits || !sgd_settings_problem(static_cast<float>(v), 0.f).empty())
    throw ParseError("", "must be positive and at most 3.4e+38, a float's largest (got " + t +
                             (fits ? as_float(v, static_cast<float>(v)) : "") + ")");
  return static_cast<float>(v);
}

float read_momentum(const std::string& t) {
  const double v = parse_float(t, "");
  const bool fits = v >= 0 && v < 1;
  if (!fits || !sgd_settings_problem(1.f, static_cast<float>(v)).empty())
    throw ParseError("", "must be in [0, 1) (got " + t + (fits ? as_float(v, static_cast<float>(v)) : "") + ")");
  return static_cast<float>(v);
}

// --hidden: at least one hidden layer ("" would train the output layer alone,
// which is not the experiment's MLP), each width in [1, kMaxLayerWidth].
models::LayerSpec read_hidden(const std::string& t) {
  if (t.empty()) parse_int_list(t, "", 1, models::kMaxLayerWidth);  // throws: "(got '': it is empty)"
  return models::parse_layer_spec(t);
}

AllocPolicy read_alloc_policy(const std::string& t) {
  AllocPolicy p;
  if (alloc_policy_named(t, &p)) return p;
  throw ParseError("", "must be enqueue, run or stream (got " + quote(t) + ")");
}

bool read_on_off(const std::string& t) {
  if (t == "on") return true;
  if (t == "off") return false;
  throw ParseError("", "must be off or on (got " + quote(t) + ")");
}

}  // namespace

size_t read_bytes(const std::string& t) { return static_cast<size_t>(parse_byte_size(t, "", kMaxByteSize)); }

namespace {

std::optional<size_t> read_memory_limit(const std::string& t) {
  if (t == "auto") return std::nullopt;
  if (t == "none") return size_t(0);
  try {
    return read_bytes(t);
  } catch (const ParseError& e) {  // name the two words too
    rethrow_naming_words(e, "a byte size", "'auto', 'none'");
  }
}

double read_status_every(const std::string& t) {
  const double v = parse_float(t, "");
  if (!(v > 0 && v <= kMaxStatusEvery_s)) throw ParseError("", "must be in (0, 86400] seconds (got " + t + ")");
  return v;
}

// --- the config file ---------------------------------------------------------------
//
// Read whole before it is parsed, so that what kind of file it is cannot stop
// the run: a FIFO or a pipe (--config <(printf 'batches=2\n')) is read as its
// writer writes; one that stays silent for its wait (a FIFO no process
// writes to, a terminal) is an error instead of a hang; a file past its cap
// (/dev/zero) is not an INI file of options (file_options.h).

// The whole text of `path`; false and why not ("it is a directory", the
// system's reason) when it cannot be read (framework/read_input.h).
bool read_config_text(const std::string& path, std::string* text, std::string* why) {
  const FileOption& f = file_option("config");  // its cap and its wait: the table of files
  return read_input(path, f.max_bytes, f.wait_s, "an INI file of options", text, why);
}

// "" when `text` can be an INI file as Boost reads it (UTF-8, lines ending in
// \n or \r\n), else why not, named as the user would fix it: UTF-32 or UTF-16
// (a byte-order mark, or NUL bytes) or lines ended by a carriage return alone.
std::string config_text_problem(const std::string& text) {
  if (text.rfind(std::string("\xFF\xFE\0\0", 4), 0) == 0 || text.rfind(std::string("\0\0\xFE\xFF", 4), 0) == 0)
    return "it is UTF-32 (it begins with a UTF-32 byte-order mark): save it as UTF-8";
  if (text.rfind("\xFF\xFE", 0) == 0 || text.rfind("\xFE\xFF", 0) == 0)
    return "it is UTF-16 (it begins with a UTF-16 byte-order mark): save it as UTF-8";
  if (text.find('\0') != std::string::npos)
    return "it holds NUL bytes, which no INI text does (UTF-16 or UTF-32 without a byte-order mark?): save it as UTF-8";
  if (text.find('\r') != std::string::npos && text.find('\n') == std::string::npos)
    return "its lines end in a carriage return alone (classic Mac OS line endings): save it with \\n line endings";
  return "";
}

// The INI text as Boost's reader takes it: a UTF-8 byte-order mark at the
// start dropped, and a line whose first non-blank character is ';' (a comment,
// as '#' is to Boost) made blank. Any other line is left to Boost.
std::string ini_for_boost(std::string text) {
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const size_t first = text.find_first_not_of(" \t", start);
    if (first < end && text[first] == ';') {
      text.erase(first, end - first);
      end = first;
    }
    start = end + 1;
  }
  return text;
}

constexpr unsigned kHelpWidth = 100;

// What one run is: the devices, the mode, the batches and the model.
void run_options(Declare& d) {
  // clang-format off
  d
    .option<DeviceChoice>("device", "DEV", "auto", read_device,
     "auto|cpu|cpu:N|cuda|cuda:N; auto picks cuda:0 when a GPU is visible, else cpu:0 (and says so)")
    .option<DevicesChoice>("devices", "DEV,DEV,..", "", read_devices,
     "data parallelism: one replica per device (e.g. cpu:0,cpu:1 or cuda:0,cuda:1; replaces --device), "
     "each batch split between them (the first batch-size % n take one row more), the gradients "
     "all-reduced by queued ops (NCCL on GPUs), the same SGD step on every replica")
    .option<bool>("distributed", "none|mpi", "none",
     [](const std::string& t) { return read_distributed(t, dist::built_with_mpi()); },
     "mpi: data parallelism across processes, run as `mpirun -np N train_mlp --distributed mpi ...`: one "
     "rank per process, one replica on its --device (cuda: cuda:<rank on the host>), each batch split "
     "across the ranks, the same losses as one process; not with --devices. Without mpirun: one rank")
    .option<SyncChoice>("sync", "MODE", "batch", parse_sync_choice,
     "batch: read the loss after every batch (a blocking item()); none: never wait in the loop, "
     "waitall() at the end; every=K: read it after every K-th batch; auto: the models choose, within "
     "--memory-budget, from the first synchronized batches' h, d and bytes per batch")
    .option<int>("batches", "N", "100", int_in(1, kMaxBatches), "minibatches to train, in [1, 100000000]")
    .option<int>("epochs", "E", "1", int_in(1, kMaxBatches),
     "passes of --batches batches, in [1, 100000000], at most 100000000 batches in all; every mode reads "
     "the last loss of each epoch (none waits there), and the pool keeps its blocks from one to the next")
    .option<int>("batch-size", "N", "1024", int_in(1, kMaxBatchSize), "samples per minibatch, in [1, 16777216]")
    .option<int>("features", "N", "512", int_in(1, kMaxFeatures), "input features, in [1, 16777216]")
    .option<models::LayerSpec>("hidden", "W1,W2,..", "2048,512", read_hidden,
     "hidden layer widths, comma-separated, at least one, each in [1, 1048576], ReLU each; the output layer "
     "has 1 unit")
    .option<float>("lr", "X", "0.005", read_lr, "SGD learning rate (> 0)")
    .option<float>("momentum", "X", "0", read_momentum, "SGD momentum, in [0, 1)")
    .option<uint64_t>("seed", "N", "1",
     [](const std::string& t) { return parse_uint(t, "", 0, std::numeric_limits<uint64_t>::max()); },
     "random seed (weights and data; same seed, same numbers in every mode)");
  // clang-format on
}

// How its work is queued and held: back-pressure, memory, host work, allocation, graphs.
void execution_options(Declare& d) {
  // clang-format off
  d
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
    .option<AllocPolicy>("alloc", "enqueue|run|stream", "enqueue", read_alloc_policy,
     "when an op's outputs get memory: enqueue: when it is queued (every pending op holds its "
     "outputs, so unsynchronized memory grows with the backlog); run: when "
     "the device's worker starts it (MXNet's delayed allocation: queued work holds nothing); stream: "
     "when queued, but a dropped tensor's block serves the next op on its queue at once (PyTorch's "
     "caching allocator: a batch reuses the last one's blocks; with --graph it is enqueue)")
    .flag("data-queue",
     "generate each batch's data on a second queue of the device, a loader stream, which the training "
     "ops wait on; with --alloc run the data runs ahead as in the book's MXNet run (CPU devices only; "
     "default: off)")
    .option<bool>("graph", "off|on", "off", read_on_off,
     "step graphs: once two batches in a row queued the same ops, each batch's ops are held and "
     "launched as one recorded CUDA graph (re-recorded where an op's arguments may change), or run "
     "one by one where the device cannot record (the CPU: the same results); off in synchronous mode "
     "and under back-pressure; a batch that differs falls back and is learned again")
    .flag("blocking", "synchronous mode: every push waits for its op (default: off)")
    .flag("tf32", "TF32 tensor-core GEMMs on CUDA; on the CPU, emulated: the GEMMs' inputs rounded to TF32 (default: off)")
    .flag("check-finite",
     "queue a check that each batch's loss is finite; a failure surfaces at the next blocker. It "
     "covers what training computes; --data's rows and --load's tensors are checked finite whether "
     "it is on or not (default: off)");
  // clang-format on
}

// The files it writes and reads.
void file_options(Declare& d) {
  // clang-format off
  d
    .text("memory-log", "FILE.csv", "",
     "one CSV row per batch, flushed per row, sampled when the batch has been queued: batch, "
     "wall_s, queue_depth, bytes_in_use, peak_bytes, reserved_bytes, rss_bytes, loss (empty "
     "when the batch was not synchronized), backlog_batches, backlog_bytes, minor_faults (the "
     "process's minor page faults since the previous row) (default: none)")
    .text("trace", "FILE.json", "",
     "Chrome trace-event JSON for Perfetto / chrome://tracing: enqueue and execution spans, "
     "queue depth and memory counters (default: none)")
    .text("summary-json", "FILE", "", "JSON array, one object per run, for scripts (default: none)")
    .text("load", "FILE.safetensors", "",
     "start from the parameters in this safetensors file (dense0.weight, dense0.bias, ...: every "
     "tensor of the model, float32, the model's shapes; checked before anything runs) instead of "
     "drawing them from --seed (default: none)")
    .text("data", "X.npy", "",
     "train on these rows instead of random data: a NumPy float32 C-order array (N, features), a "
     "regular file whose rows are read as batches need them, each value checked finite; --features is its columns; an epoch is one pass, N / --batch-size batches "
     "(default: random data)")
    .text("targets", "Y.npy", "", "the targets of --data's rows: float32, (N) or (N, 1) (default: none)")
    .flag("shuffle", "with --data: the rows in an order drawn again each epoch from --seed (default: off, in file order)")
    .option<std::string>("last-batch", "drop|keep", "drop", read_last_batch,
     "with --data: a last batch of fewer than --batch-size rows is dropped, or kept and trained")
    .text("save", "FILE.safetensors", "",
     "write the parameters when training ends, also when interrupted (the queued batches run "
     "first): a safetensors file PyTorch and the safetensors package read, written whole or not "
     "at all (default: none)");
  // clang-format on
}

// The live status.
void status_options(Declare& d) {
  // clang-format off
  d
    .flag("quiet", "no live status line on stderr (default: off)")
    .option<double>("status-every", "SECONDS", "10", read_status_every,
     "the live status line (batches queued and finished, the backlog, memory against its prediction "
     "and the budget, samples/s): redrawn in place a few times a second on a terminal; otherwise "
     "printed as a line every SECONDS, in (0, 86400]");
  // clang-format on
}

// The studies' options (study_options.h): a function-local static, filled by
// the studies' static RegisterStudyOptions objects whatever order their
// files' initialisers run in, kept by order.
std::vector<StudyOptionsEntry>& study_options_registry() {
  static std::vector<StudyOptionsEntry> r;
  return r;
}

po::options_description general_options() {
  po::options_description d("Training options (also INI keys)", kHelpWidth, kHelpWidth / 2);
  Declare declare(d);
  run_options(declare);
  execution_options(declare);
  file_options(declare);
  status_options(declare);
  for (const StudyOptionsEntry& e : study_options_entries()) e.declare(declare);  // train/studies/
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
  o.distributed = vm["distributed"].as<bool>();
  o.sync = vm["sync"].as<SyncChoice>().mode;
  o.batches = vm["batches"].as<int>();
  o.epochs = vm["epochs"].as<int>();
  o.batch_size = vm["batch-size"].as<int>();
  o.features = vm["features"].as<int>();
  o.hidden = vm["hidden"].as<models::LayerSpec>();
  o.lr = vm["lr"].as<float>();
  o.momentum = vm["momentum"].as<float>();
  o.seed = vm["seed"].as<uint64_t>();
  o.max_pending_ops = vm["max-pending"].as<uint64_t>();
  o.max_pending_bytes = vm["max-pending-bytes"].as<size_t>();
  o.memory_limit = vm["memory-limit"].as<std::optional<size_t>>();
  o.blocking = vm["blocking"].as<bool>();
  o.tf32 = vm["tf32"].as<bool>();
  o.check_finite = vm["check-finite"].as<bool>();
  o.alloc = vm["alloc"].as<AllocPolicy>();
  o.data_queue = vm["data-queue"].as<bool>();
  o.graph = vm["graph"].as<bool>();
  o.host_work = vm["host-work"].as<HostWork>();
  o.host_work.kind = vm["host-work-kind"].as<HostWorkKind>();
  o.quiet = vm["quiet"].as<bool>();
  o.status_every_s = vm["status-every"].as<double>();
  o.memory_log = s("memory-log");
  o.trace = s("trace");
  o.summary_json = s("summary-json");
  o.load = s("load");
  o.save = s("save");
  o.data = s("data");
  o.targets = s("targets");
  o.shuffle = vm["shuffle"].as<bool>();
  o.keep_last = vm["last-batch"].as<std::string>() == "keep";
  for (const StudyOptionsEntry& e : study_options_entries())
    if (std::any settings = e.read(vm); settings.has_value()) o.studies.set(e.study, std::move(settings));
  return o;
}

}  // namespace

RegisterStudyOptions::RegisterStudyOptions(const StudyOptionsEntry& e) {
  auto& r = study_options_registry();
  r.insert(std::upper_bound(r.begin(), r.end(), e,
                            [](const StudyOptionsEntry& a, const StudyOptionsEntry& b) { return a.order < b.order; }),
           e);
}

const std::vector<StudyOptionsEntry>& study_options_entries() { return study_options_registry(); }

// --- --help's prose around the option table: what the program does, and after
// the options the models (train/predict/predict.h), what --compare and --sweep run and
// the exit statuses; --version ---------------------------------------------------

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

static std::string usage_text() { return kUsage; }

std::string help_after_models() { return kCompareAndExit; }

// "asyncmlp 0.1.0 (CUDA backend: yes|no)"
static std::string version_string() {
  return std::string("asyncmlp ") + ASYNCMLP_VERSION + " (CUDA backend: " + (built_with_cuda() ? "yes" : "no") + ")";
}

// --- the checks across the options, once each value has parsed: options that do
// not combine, a value another one rules out. One line each, for
// "train_mlp: error: " and exit 2 ------------------------------------------------

std::string options_problem(const Options& o) {
  for (const StudyOptionsEntry& e : study_options_entries())  // what each study's settings do not combine with
    if (std::string why = e.problem(o); !why.empty()) return why;
  if (static_cast<int64_t>(o.batches) * o.epochs > kMaxBatches)
    return "--epochs " + std::to_string(o.epochs) + " x --batches " + std::to_string(o.batches) + " is " +
           std::to_string(static_cast<int64_t>(o.batches) * o.epochs) + " batches: at most 100000000 in all";
  if (!o.data.empty() && o.data_queue)
    return "--data's rows are copied by the frontend's queued copy: not with --data-queue (random data drawn on a loader queue)";
  if (o.distributed && !o.devices.empty())
    return "--devices and --distributed mpi do not combine: under mpirun each rank trains one replica on its --device";
  if (o.devices.size() > static_cast<size_t>(o.batch_size))
    return "--devices: " + std::to_string(o.devices.size()) + " devices cannot split a batch of " +
           std::to_string(o.batch_size) + " (--batch-size): each needs at least one row";
  for (const Device& d : o.devices)
    if (o.data_queue && d.is_cuda())
      return "--data-queue needs CPU devices: on " + d.str() +
             " every kernel launches onto the device's one stream (use --devices cpu:0,cpu:1)";
  if (o.data_queue && o.device.is_cuda())
    return "--data-queue needs a CPU device: on " + o.device.str() +
           " every kernel launches onto the device's one stream (use --device cpu)";
  return "";
}

std::string read_last_batch(const std::string& t) {
  if (t != "drop" && t != "keep") throw ParseError("", "must be drop or keep (got " + quote(t) + ")");
  return t;
}

std::string data_problem(Options& o, bool features_given, bool batches_given) {
  if (o.data.empty() && o.targets.empty()) {
    if (o.shuffle) return "--shuffle orders --data's rows: add --data X.npy --targets Y.npy";
    if (o.keep_last) return "--last-batch keep is --data's last partial batch: add --data X.npy --targets Y.npy";
    return "";
  }
  if (o.data.empty()) return "--targets needs --data X.npy, the rows they belong to";
  if (o.targets.empty()) return "--data needs --targets Y.npy, a target for each of its rows";
  if (o.data == o.targets) return "--data and --targets name one file: the rows and their targets are two arrays";
  NpyHeader x, y;
  try {
    x = npy_header(o.data);
  } catch (const NpyError& e) {
    return std::string("--data ") + e.what();
  }
  try {
    y = npy_header(o.targets);
  } catch (const NpyError& e) {
    return std::string("--targets ") + e.what();
  }
  const auto shape = [](const NpyHeader& h) {
    std::string t = "(";
    for (size_t i = 0; i < h.shape.size(); ++i) t += (i ? ", " : "") + std::to_string(h.shape[i]);
    return t + (h.shape.size() == 1 ? ",)" : ")");
  };
  if (x.shape.size() != 2) return "--data '" + shown_path(o.data) + "': its shape is " + shape(x) + ": it must be (rows, features)";
  if (y.cols() != 1)
    return "--targets '" + shown_path(o.targets) + "': its shape is " + shape(y) + ": it must be (rows,) or (rows, 1)";
  if (y.rows() != x.rows())
    return "--targets '" + shown_path(o.targets) + "' has " + std::to_string(y.rows()) + " rows, --data '" +
           shown_path(o.data) + "' " + std::to_string(x.rows()) + ": one target per row";
  if (x.cols() > kMaxFeatures) return "--data '" + shown_path(o.data) + "': " + std::to_string(x.cols()) + " features, at most 16777216";
  if (features_given && x.cols() != o.features)
    return "--features " + std::to_string(o.features) + " disagrees with --data '" + shown_path(o.data) + "', which has " +
           std::to_string(x.cols()) + " (drop --features: it is taken from the file)";
  if (batches_given) return "--batches with --data: an epoch is one pass over its rows (use --epochs for more)";
  if (x.rows() < o.batch_size)
    return "--data '" + shown_path(o.data) + "' has " + std::to_string(x.rows()) + " rows, fewer than a batch of " +
           std::to_string(o.batch_size) + " (--batch-size)";
  // --shuffle's order, a row index each (train/runs/data_set.h), is host
  // memory outside the pools: held to the budget the run's memory is held
  // to (--memory-limit, else the host's), so a file declaring more rows than
  // fit is refused here, not a std::bad_alloc or the system's killer later.
  if (o.shuffle) {
    const size_t need = static_cast<size_t>(x.rows()) * sizeof(int64_t);
    const MemoryBudget budget = o.memory_limit && *o.memory_limit ? MemoryBudget{*o.memory_limit, "--memory-limit"}
                                : o.memory_limit                  ? MemoryBudget{}
                                                                  : host_memory_budget();
    if (budget.bytes && need > budget.bytes)
      return "--shuffle: the order of --data's " + std::to_string(x.rows()) + " rows takes " + std::to_string(need) +
             " bytes of host memory, past the budget of " + std::to_string(budget.bytes) + " bytes (" + budget.source +
             "): shuffle the file beforehand, or drop --shuffle";
  }
  o.features = static_cast<int>(x.cols());
  o.data_rows = x.rows();
  const int64_t batches = o.keep_last ? (x.rows() + o.batch_size - 1) / o.batch_size : x.rows() / o.batch_size;
  if (batches > kMaxBatches) return "--data: " + std::to_string(batches) + " batches per epoch, at most 100000000";
  o.batches = static_cast<int>(batches);
  return "";
}

bool read_distributed(const std::string& t, bool with_mpi) {
  if (t == "none") return false;
  if (t != "mpi") throw ParseError("", "must be none or mpi (got " + quote(t) + ")");
  if (!with_mpi)
    throw ParseError("", "mpi: this build has no MPI (configure with -DASYNCMLP_MPI=ON where an MPI is installed)");
  return true;
}

HostWorkKind parse_host_work_kind(const std::string& text) {
  if (text == "wait") return HostWorkKind::Wait;
  if (text == "compute") return HostWorkKind::Compute;
  throw ParseError("", "must be wait or compute (got " + quote(text) + ")");
}

HostWork parse_host_work(const std::string& text) {
  HostWork w;
  if (text == "match") {
    w.match_device = true;
    return w;
  }
  try {
    w.ns = parse_duration_ns(text, "", kMaxHostWorkNs);
  } catch (const ParseError& e) {  // name the word too
    rethrow_naming_words(e, "a duration", "'match'");
  }
  return w;
}

std::vector<Device> run_devices(const Options& s) {
  return s.devices.empty() ? std::vector<Device>{s.device} : s.devices;
}

namespace {

// --config FILE's values into `vm` (where the command line did not set the
// key; the file's parse in `from_file`): "" or what is wrong, one line.
std::string read_config_file(const std::string& config, const po::options_description& general, po::variables_map& vm,
                             std::optional<po::parsed_options>* from_file) {
  const std::string shown = shown_path(config);
  std::string text, why;
  if (!read_config_text(config, &text, &why)) return "cannot read config file '" + shown + "': " + why;
  if (const std::string bad = config_text_problem(text); !bad.empty()) return "config file '" + shown + "': " + bad;
  std::istringstream in(ini_for_boost(std::move(text)));
  try {
    *from_file = po::parse_config_file(in, general, /*allow_unregistered=*/false);
    // Checked here, not by store(): store() skips keys the command line set.
    std::set<std::string> seen;
    for (const po::option& opt : (*from_file)->options)
      if (!seen.insert(opt.string_key).second) return shown + ": key '" + opt.string_key + "' is given more than once";
    // Every value the file gives is read, also where the command line sets
    // the key: a bad file is bad input whatever overrides it.
    po::variables_map file_values;
    po::store(**from_file, file_values);
    po::store(**from_file, vm);  // keys the command line set are not read: the command line wins
  } catch (const BadValue& e) {
    return "'" + e.key + "' in " + shown + e.problem;
  } catch (const po::error& e) {
    return option_error(e, shown);
  }
  return "";
}

}  // namespace

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
      s << usage_text() << "\n" << cmdline;
      out.status = ParseStatus::Exit;
      out.help = true;
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
  std::optional<po::parsed_options> from_file;  // the config file's values, where there is one
  const std::string config = vm["config"].as<std::string>();
  if (config.empty() && !vm["config"].defaulted()) return fail("--config must name a file (got '')");
  if (!config.empty())
    if (const std::string why = read_config_file(config, general, vm, &from_file); !why.empty()) return fail(why);
  // A file option given an empty path (`--save ''`, `save =` in the config) is
  // refused as --config's is, not taken for the option left out.
  for (const FileOption& f : file_options())
    if (vm.count(f.option) && !vm[f.option].defaulted() && vm[f.option].as<std::string>().empty())
      return fail(std::string("--") + f.option + " must name a file (got '')");
  try {
    po::notify(vm);
    out.options = to_options(vm);
    std::vector<const po::parsed_options*> sources{&parsed};  // the command line wins
    if (from_file) sources.push_back(&*from_file);
    out.options.settings = settings_text(general, sources, vm);
  } catch (const po::error& e) {
    return fail(option_error(e, ""));
  }
  if (const std::string why = data_problem(out.options, !vm["features"].defaulted(), !vm["batches"].defaulted());
      !why.empty())
    return fail(why);
  if (const std::string why = options_problem(out.options); !why.empty()) return fail(why);
  return out;
}

ParseOutcome parse_options(int argc, const char* const argv[]) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return parse_options(args);
}

}  // namespace amlp::train
