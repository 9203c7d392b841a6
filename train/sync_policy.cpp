#include "train/sync_policy.h"

#include <stdexcept>

namespace amlp::train {

SyncMode parse_sync_mode(const std::string& text) {
  if (text == "batch") return {SyncPolicy::EveryBatch, 1};
  if (text == "none") return {SyncPolicy::Never, 0};
  const std::string prefix = "every=";
  if (text.compare(0, prefix.size(), prefix) == 0) {
    const std::string k = text.substr(prefix.size());
    bool digits = !k.empty() && k.size() <= 9;
    for (char c : k) digits = digits && c >= '0' && c <= '9';
    if (!digits)
      throw std::invalid_argument("'" + text + "': K in every=K must be a positive integer (got '" + k + "')");
    const int v = std::stoi(k);
    if (v <= 0) throw std::invalid_argument("'" + text + "': K in every=K must be positive (got " + k + ")");
    return {SyncPolicy::EveryK, v};
  }
  throw std::invalid_argument("'" + text + "' is not a sync mode (expected batch, none or every=K)");
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
