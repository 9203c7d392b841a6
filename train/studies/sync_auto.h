// sync_auto.h — train_mlp --sync auto --memory-budget BYTES: the models
// (train/predict/predict.h) choose how often the loop waits. The first synchronized
// batches give h, d and the bytes per batch; each candidate — batch, the
// largest every=K whose predicted memory fits, none, and none bounded by
// --max-pending-bytes — gets its predicted
// wall time and memory increase, and the fastest that fits the budget wins
// (on a tie, the one that holds less; holding alike, bounded over none, whose
// backlog only the model holds down). The bound is two batches' bytes (or
// what the budget leaves, at least one batch): any bound of a batch or more
// keeps the device as busy as none, so more would only hold more.
//
//   AutoChoice c = choose_sync(100, h, d, bytes_per_batch, largest, 64 << 20);
//   settings.sync = c.chosen.sync; settings.max_pending_bytes = c.chosen.max_pending_bytes;
//   print(c.why);
#pragma once
#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "train/options/options.h"
#include "train/options/sync_policy.h"

namespace amlp::train {

// --sync auto and --memory-budget, as given (either alone is refused).
struct SyncAutoSettings {
  static constexpr const char* kStudy = "sync auto";
  bool automatic = false;
  size_t budget = 0;
};

struct AutoCandidate {
  std::string label;             // "batch", "every=12", "none", "bounded"
  SyncMode sync;
  size_t max_pending_bytes = 0;  // bounded: the bound
  int every = 1;                 // the throughput model's K
  double predicted_wall_s = 0;
  size_t predicted_increase_bytes = 0;
  bool fits = false;             // predicted increase within the budget
};

struct AutoChoice {
  int batches = 0;
  double host_s = 0, device_s = 0;
  size_t bytes_per_batch = 0, largest_tensor_bytes = 0, budget = 0;
  std::vector<AutoCandidate> candidates;
  AutoCandidate chosen;
  std::string why;  // one line: what was chosen, its prediction, and what the others would have cost
};

AutoChoice choose_sync(int batches, double host_s, double device_s, size_t bytes_per_batch,
                       size_t largest_tensor_bytes, size_t budget);

// Measures 8 synchronized batches (after 3 to warm up) of the run `o`
// describes, with its host work, and chooses; every rank chooses from rank
// 0's figures. Prints the choice to `out`.
AutoChoice resolve_sync_auto(const Options& o, std::ostream& out);

}  // namespace amlp::train
