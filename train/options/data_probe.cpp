// data_probe.cpp — --data and --targets probed before anything runs
// (data_problem, options.h): both or neither, their .npy headers read and
// checked against each other and the options; what they hold sets the run's
// features and batches.
#include <cstdint>
#include <string>

#include "framework/parse.h"
#include "framework/runtime.h"
#include "train/options/npy_file.h"
#include "train/options/option_values.h"
#include "train/options/options.h"

namespace amlp::train {

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

}  // namespace amlp::train
