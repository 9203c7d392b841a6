// sync_policy.h — when the training loop waits for the device.
//
//   SyncMode m = parse_sync_mode("every=10");   // {SyncPolicy::EveryK, 10}
//   m.syncs_after(batch)                         // true for batches 10, 20, ...
//   to_string(m) == "every=10", file_tag(m) == "every10"
#pragma once
#include <string>

namespace amlp::train {

enum class SyncPolicy {
  EveryBatch,  // read the loss after every batch (a blocking item()): the book's run 1
  Never,       // never wait inside the loop; waitall() at the end: the book's run 2
  EveryK,      // read the loss after every K-th batch
};

struct SyncMode {
  SyncPolicy policy = SyncPolicy::EveryBatch;
  int every = 1;  // K for EveryK (1 for EveryBatch, 0 for Never)

  // Whether the loop reads the loss (and so waits) after batch `batch` (1-based).
  bool syncs_after(int batch) const {
    switch (policy) {
      case SyncPolicy::EveryBatch:
        return true;
      case SyncPolicy::Never:
        return false;
      case SyncPolicy::EveryK:
        return batch % every == 0;
    }
    return false;
  }
  bool operator==(const SyncMode& o) const { return policy == o.policy && every == o.every; }
};

// Largest K of every=K.
constexpr int kMaxSyncEvery = 1000000000;

// "batch" | "none" | "every=K" (K a decimal integer in [1, kMaxSyncEvery]).
// Throws amlp::ParseError (framework/parse.h) whose problem() names the text
// and the range: "must be batch, none or every=K with K in [1, 1000000000]
// (got 'every=0')".
SyncMode parse_sync_mode(const std::string& text);
std::string to_string(const SyncMode& m);  // "batch", "none", "every=10"
std::string file_tag(const SyncMode& m);   // "batch", "none", "every10" (for file names)

}  // namespace amlp::train
