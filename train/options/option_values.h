// option_values.h — reading one option's value: the parser each option of
// the table (option_table.h) is declared with, and the ranges they hold
// the values to. Each takes the text as given and returns the value, or
// throws amlp::ParseError whose problem() follows the option's name: "must
// be in [0, 1) (got 1)" (a device's reader, the DeviceError of
// framework/device.h: a whole sentence). The checks across options (options_problem) and
// --data's (data_problem) hold the counts to the same ranges.
//
//   read_bytes("256MiB")                  == 256 << 20
//   parse_sync_choice("auto").automatic   == true
//   parse_host_work("2ms").ns             == 2000000
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
#include "train/options/sync_policy.h"

namespace amlp::train {

// The ranges, named in the messages.
constexpr int64_t kMaxBatches = 100000000;  // --batches, and --batches x --epochs
constexpr int64_t kMaxBatchSize = int64_t(1) << 24;
constexpr int64_t kMaxFeatures = int64_t(1) << 24;  // --features, and --data's columns
constexpr uint64_t kMaxPendingOps = uint64_t(1) << 40;
constexpr double kMaxStatusEvery_s = 86400;

// --sync's value: a mode, or auto (train/studies/sync_auto.h: the models
// choose, and `mode` is batch until they have).
struct SyncChoice {
  SyncMode mode;
  bool automatic = false;
};
// "auto", or what parse_sync_mode reads; throws amlp::ParseError naming auto too.
SyncChoice parse_sync_choice(const std::string& text);

// --device's value: the text as given, the device it names, and whether
// "auto" found no GPU and chose cpu:0.
struct DeviceChoice {
  std::string text;
  Device device;
  bool fell_back = false;
};
DeviceChoice read_device(const std::string& text);

// --devices' value: the text as given ("" = not given) and the devices,
// distinct, that all_reduce_sum can reduce together in this build.
struct DevicesChoice {
  std::string text;
  std::vector<Device> devices;
};
// "cpu:0,cpu:1".
DevicesChoice read_devices(const std::string& text);

// --lr and --momentum: checked as the floats SGD will take, by SGD's own
// check (sgd_settings_problem), so a value SGD would refuse at run time
// (1e-46 rounds to 0, 0.99999999999 to 1) is refused here, naming the option.
float read_lr(const std::string& text);
float read_momentum(const std::string& text);

// --hidden: at least one hidden layer ("" would train the output layer alone,
// which is not the experiment's MLP), each width in [1, kMaxLayerWidth].
models::LayerSpec read_hidden(const std::string& text);

// --alloc: "enqueue" | "run" | "stream".
AllocPolicy read_alloc_policy(const std::string& text);
// --graph: "off" → false, "on" → true.
bool read_on_off(const std::string& text);

// A byte size, "256MiB", "1G", "4096" (framework/parse.h's parse_byte_size);
// throws amlp::ParseError.
size_t read_bytes(const std::string& text);
// --memory-limit: "auto" → nullopt, "none" → 0, else a byte size.
std::optional<size_t> read_memory_limit(const std::string& text);

// --status-every: seconds in (0, kMaxStatusEvery_s].
double read_status_every(const std::string& text);

// --distributed: "none" → false, "mpi" → true; ParseError for anything else,
// and for "mpi" when `with_mpi` is false (a build without MPI), saying why.
bool read_distributed(const std::string& text, bool with_mpi);

// --host-work-kind: "wait" | "compute"; throws amlp::ParseError naming both.
HostWorkKind parse_host_work_kind(const std::string& text);
// --host-work: DURATION ("2ms", "250us", "0"; framework/parse.h) or "match".
HostWork parse_host_work(const std::string& text);

// --last-batch's value: "drop" or "keep" (ParseError otherwise).
std::string read_last_batch(const std::string& text);

}  // namespace amlp::train
