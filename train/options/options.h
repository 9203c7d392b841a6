// options.h — train_mlp's options: command line and INI file (--config),
// through Boost.Program_options. The command line wins over the file, the
// file over the defaults. INI keys are the long option names.
//
//   ParseOutcome p = parse_options(argc, argv);
//   if (p.status == ParseStatus::Error) { std::cerr << "train_mlp: error: " << p.message << "\n"; return p.exit_code; }
//   if (p.status == ParseStatus::Exit)  { std::cout << p.message; return 0; }   // --help, --version
//   run(p.options);
//
// Everything a user can get wrong is caught here, before anything runs or any
// file is created: unknown options and config keys, a key given twice in the
// config, malformed or out-of-range values, a missing config, an absent
// device, an unwritable output path. Each option is declared once with its
// type and the framework/parse.h parser that reads it (decimal only: no hex,
// '+' or whitespace; a message names the range), and Boost calls that parser
// when it stores the value, from the command line or the config file.
//
// The option table is option_table.h's, the readers of the values
// option_values.h's (included here: the studies' declarations use them too),
// the config file's reading config_file.h's and --help's prose help_text.h's.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "framework/device.h"
#include "framework/runtime.h"
#include "models/mlp.h"
#include "train/options/host_work.h"
#include "train/options/option_values.h"
#include "train/options/study_settings.h"
#include "train/options/sync_policy.h"

namespace amlp::train {

// The options stage's one type: every option's value, as parsed and checked.
// A run of the plan (train/plan/run_result.h's RunSpec) holds these, as the
// plan set them for that run, with its label.
struct Options {
  // What one training run needs.
  Device device;  // resolved from --device (with --devices: the first of them)
  // --devices: data parallelism, one replica per device (empty: one device,
  // `device`, and no replicas). Checked: distinct, reducible together.
  std::vector<Device> devices;
  SyncMode sync;  // --sync batch|none|every=K
  int batches = 100;
  int epochs = 1;  // passes of `batches` batches; each ends by reading its last loss
  int total_batches() const { return batches * epochs; }  // checked to fit (at most 100000000)
  int batch_size = 1024;
  int features = 512;
  models::LayerSpec hidden{{2048, 512}};
  float lr = 0.005f;
  float momentum = 0.f;
  uint64_t seed = 1;
  uint64_t max_pending_ops = 0;  // back-pressure in ops (0 = unbounded)
  size_t max_pending_bytes = 0;  // back-pressure in bytes (0 = unbounded)
  bool check_finite = false;
  AllocPolicy alloc = AllocPolicy::Enqueue;  // --alloc enqueue|run
  bool data_queue = false;                   // --data-queue: data generated on the device's data queue
  // --distributed mpi: one rank per process under mpirun, each batch split
  // across the ranks (train/runs/distributed_run.h); one rank alone trains as without it.
  bool distributed = false;
  bool graph = false;                        // --graph on: steady batches launched as one recorded graph
  HostWork host_work;      // --host-work, --host-work-kind (the frontend's work per batch)
  std::string sync_chosen;  // --sync auto: what the models chose and why ("" otherwise)
  std::string memory_log;  // "" = not written
  std::string load;        // --load FILE.safetensors: the parameters to start from ("" = drawn from --seed)
  // --data X.npy --targets Y.npy: train on these rows instead of random data
  // (npy_file.h; "" = random). With them `features` is X's columns and
  // `batches` the batches of one pass over its `data_rows` rows.
  std::string data, targets;
  int64_t data_rows = 0;
  bool shuffle = false;    // --shuffle: the rows' order drawn again each epoch from --seed
  bool keep_last = false;  // --last-batch keep: a last partial batch is trained (else dropped)
  std::string save;        // --save FILE.safetensors: the parameters when training ends ("" = not kept)
  bool quiet = false;             // --quiet: no live status line
  double status_every_s = 10;     // --status-every: the status line's period off a terminal

  // The program's: its files, the device as asked, the studies.
  std::string config;  // --config FILE ("" = none)
  std::string device_text = "auto";
  std::string devices_text;  // --devices as given ("" = not given)
  bool device_fell_back = false;  // "auto" found no GPU and chose cpu:0
  // --memory-limit: nullopt = auto (a CPU pool keeps the host's budget,
  // host_memory_budget(); a CUDA pool the GPU's own memory), 0 = none.
  std::optional<size_t> memory_limit;
  bool blocking = false;
  bool tf32 = false;
  std::string trace, summary_json;  // "" = not written
  // The studies asked for (--compare, --sweep, --sync auto, ...), each with
  // its own settings, which its file in train/studies/ declares and reads
  // (study_options.h); none asked for: the one run above.
  StudySettings studies;
  // Every option and its value as given, one "key=value" a line
  // (program_options.h settings_text): what the ranks of a run compare.
  std::string settings;
};

// The devices a run trains on: --devices, or the one device.
std::vector<Device> run_devices(const Options& s);

enum class ParseStatus {
  Run,    // options are valid: run
  Exit,   // --help or --version: print message on stdout, exit 0
  Error,  // print "train_mlp: error: " + message on stderr, exit exit_code (2)
};

struct ParseOutcome {
  ParseStatus status = ParseStatus::Run;
  int exit_code = 0;
  std::string message;  // one line for Error; the help or version text for Exit
  // --help: `message` is the usage and the option table; after them come the
  // models' help (train/predict/predict.h: models_help) and help_after_models().
  bool help = false;
  Options options;
};

constexpr int kExitBadInput = 2;
constexpr int kExitRunFailed = 1;

ParseOutcome parse_options(int argc, const char* const argv[]);
// --help's last part: each study's paragraph (what --compare and --sweep run), then the exit statuses.
std::string help_after_models();

// "" when the parsed options combine, else why not (one line); parse_options
// calls it after every value has parsed.
std::string options_problem(const Options& o);
// --data and --targets: both or neither, each a float32 C-order .npy (its
// header read, the file's size checked), one target per row, at least a
// batch of rows; sets `features` from X and `batches` to one pass's. One
// line naming the option on a problem ("" otherwise). `features_given`,
// `batches_given`: set by the user, not defaulted.
std::string data_problem(Options& o, bool features_given, bool batches_given);
ParseOutcome parse_options(const std::vector<std::string>& args);  // args without argv[0]

}  // namespace amlp::train
