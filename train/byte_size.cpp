#include "train/byte_size.h"

#include <cstdio>

namespace amlp::train {

static std::string fmt(double v, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, unit);
  return buf;
}

std::string format_mb(double bytes) { return fmt(bytes / 1e6, "MB"); }
std::string format_mib(double bytes) { return fmt(bytes / (1024.0 * 1024.0), "MiB"); }

}  // namespace amlp::train
