#include "framework/device.h"

#include <climits>

#include "framework/core/settings.h"
#include "framework/error.h"
#include "framework/parse.h"

namespace amlp {

std::string Device::str() const { return (kind == DeviceKind::CPU ? "cpu:" : "cuda:") + std::to_string(index); }

// N in cpu:N / cuda:N: a decimal integer (framework/parse.h); whether that
// device exists is checked by the caller, which can name the ones that do.
static bool parse_index(const std::string& s, int* out) {
  try {
    *out = static_cast<int>(parse_int(s, "device index", 0, INT_MAX));
    return true;
  } catch (const ParseError&) {
    return false;
  }
}

Device parse_device(const std::string& s, bool* fell_back) {
  const std::string name = quote(s);  // the string as messages show it: '<s>', one line
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
    throw DeviceError("unknown device " + name + " (expected auto, cpu, cpu:N, cuda or cuda:N)");
  if (kind == "cpu") {
    if (i >= kMaxCpuDevices) throw DeviceError(detail::device_absent(s));
    return Device::cpu(i);
  }
  if (!built_with_cuda() || i >= cuda_device_count()) throw DeviceError(detail::device_absent(s));
  return Device::cuda(i);
}

}  // namespace amlp
