#include "train/options/sync_policy.h"

#include "framework/parse.h"

namespace amlp::train {

SyncMode parse_sync_mode(const std::string& text) {
  if (text == "batch") return {SyncPolicy::EveryBatch, 1};
  if (text == "none") return {SyncPolicy::Never, 0};
  const std::string prefix = "every=";
  const std::string allowed = "must be batch, none or every=K with K in [1, " + std::to_string(kMaxSyncEvery) + "]";
  if (text.compare(0, prefix.size(), prefix) == 0) {
    try {
      return {SyncPolicy::EveryK, static_cast<int>(parse_int(text.substr(prefix.size()), "", 1, kMaxSyncEvery))};
    } catch (const ParseError&) {
      throw ParseError("sync mode", allowed + " (got " + quote(text) + ")");
    }
  }
  throw ParseError("sync mode", allowed + " (got " + quote(text) + ")");
}

std::string to_string(const SyncMode& m) {
  switch (m.policy) {
    case SyncPolicy::EveryBatch:
      return "batch";
    case SyncPolicy::Never:
      return "none";
    case SyncPolicy::EveryK:
      return "every=" + std::to_string(m.every);
  }
  return "?";
}

std::string file_tag(const SyncMode& m) {
  return m.policy == SyncPolicy::EveryK ? "every" + std::to_string(m.every) : to_string(m);
}

}  // namespace amlp::train
