#include "train/version.h"

#include "framework/device.h"

namespace amlp::train {
std::string version_string() {
  return std::string("asyncmlp ") + ASYNCMLP_VERSION + " (CUDA backend: " + (built_with_cuda() ? "yes" : "no") + ")";
}
}  // namespace amlp::train
