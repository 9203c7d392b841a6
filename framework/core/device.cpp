#include "framework/device.h"

#include <cstdlib>

#include "framework/core/settings.h"
#include "framework/error.h"

namespace amlp {

std::string Device::str() const { return (kind == DeviceKind::CPU ? "cpu:" : "cuda:") + std::to_string(index); }

static bool parse_index(const std::string& s, int* out) {
  if (s.empty() || s.size() > 4) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  *out = std::atoi(s.c_str());
  return true;
}

Device parse_device(const std::string& s, bool* fell_back) {
  if (fell_back) *fell_back = false;
  if (s == "auto") {
    if (cuda_device_count() > 0) return Device::cuda(0);
    if (fell_back) *fell_back = true;
    return Device::cpu(0);
  }
  std::string kind = s, idx = "0";
  auto colon = s.find(':');
  if (colon != std::string::npos) {
    kind = s.substr(0, colon);
    idx = s.substr(colon + 1);
  }
  int i = 0;
  if (!parse_index(idx, &i) || (kind != "cpu" && kind != "cuda"))
    throw DeviceError("unknown device '" + s + "' (expected auto, cpu, cpu:N, cuda or cuda:N)");
  if (kind == "cpu") {
    if (i >= kMaxCpuDevices) throw DeviceError(detail::device_absent(s));
    return Device::cpu(i);
  }
  if (!built_with_cuda() || i >= cuda_device_count()) throw DeviceError(detail::device_absent(s));
  return Device::cuda(i);
}

}  // namespace amlp
