// option_table.cpp — the declarations of train_mlp's options (option_table.h)
// and the registry of the studies' (study_options.h).
#include "train/options/option_table.h"

#include <algorithm>
#include <any>
#include <limits>
#include <optional>

#include "framework/process_group.h"
#include "train/options/option_values.h"
#include "train/options/study_options.h"

namespace amlp::train {

namespace {

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

// The tables' captions, in --help and in docs/cli.md.
const char* const kTrainingCaption = "Training options (also INI keys)";
const char* const kCommandLineCaption = "Command line only";

// The studies' options (study_options.h): a function-local static, filled by
// the studies' static RegisterStudyOptions objects whatever order their
// files' initialisers run in, kept by order.
std::vector<StudyOptionsEntry>& study_options_registry() {
  static std::vector<StudyOptionsEntry> r;
  return r;
}

}  // namespace

po::options_description general_options() {
  po::options_description d(kTrainingCaption, kHelpWidth, kHelpWidth / 2);
  Declare declare(d);
  run_options(declare);
  execution_options(declare);
  file_options(declare);
  status_options(declare);
  for (const StudyOptionsEntry& e : study_options_entries()) e.declare(declare);  // train/studies/
  return d;
}

po::options_description command_line_only() {
  po::options_description d(kCommandLineCaption, kHelpWidth, kHelpWidth / 2);
  d.add_options()("help,h", "print this help and exit")("version", "print the version and exit");
  Declare(d).text("config", "FILE.ini", "", "INI file of options; keys are the long names (default: none)");
  return d;
}

std::string options_markdown() {
  return std::string(kCommandLineCaption) + ":\n\n" + markdown_table(command_line_only()) + "\n" + kTrainingCaption +
         ":\n\n" + markdown_table(general_options());
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

RegisterStudyOptions::RegisterStudyOptions(const StudyOptionsEntry& e) {
  auto& r = study_options_registry();
  r.insert(std::upper_bound(r.begin(), r.end(), e,
                            [](const StudyOptionsEntry& a, const StudyOptionsEntry& b) { return a.order < b.order; }),
           e);
}

const std::vector<StudyOptionsEntry>& study_options_entries() { return study_options_registry(); }

}  // namespace amlp::train
