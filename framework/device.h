// device.h — naming devices: "cpu:0", "cpu:1", "cuda:0", "auto".
#pragma once
#include <string>

namespace amlp {

enum class DeviceKind { CPU, CUDA };

struct Device {
  DeviceKind kind = DeviceKind::CPU;
  int index = 0;

  std::string str() const;  // "cpu:0", "cuda:1"
  bool is_cuda() const { return kind == DeviceKind::CUDA; }
  bool operator==(const Device& o) const { return kind == o.kind && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }

  static Device cpu(int i = 0) { return {DeviceKind::CPU, i}; }
  static Device cuda(int i = 0) { return {DeviceKind::CUDA, i}; }
};

// Number of CPU devices ("cpu:0" .. "cpu:N-1"); each has its own queue and worker.
constexpr int kMaxCpuDevices = 8;

// GPUs the CUDA runtime can see; 0 when built without CUDA or when the driver
// is absent or refuses (never throws).
int cuda_device_count();
bool built_with_cuda();

// Parses and validates a device string. "auto" resolves to cuda:0 when a GPU
// is visible, otherwise cpu:0 (and *fell_back is set so callers can say so).
// "cuda" means cuda:0, "cpu" cpu:0. Throws DeviceError naming the string for
// anything malformed or absent.
Device parse_device(const std::string& s, bool* fell_back = nullptr);

}  // namespace amlp
