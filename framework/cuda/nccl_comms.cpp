// nccl_comms.cpp — see nccl_comms.h.
#include "framework/cuda/nccl_comms.h"

#include <map>
#include <mutex>
#include <string>

#include "framework/core/settings.h"
#include "framework/cuda/nccl_check.h"
#include "framework/device.h"
#include "framework/error.h"

namespace amlp::cuda {

std::vector<void*> nccl_communicators(const std::vector<int>& devices) {
  // Never destroyed, on purpose. As a static made after the device registry,
  // the cache would be destroyed before the registry drains the queues at
  // exit, with all-reduces perhaps still in flight; and once the registry has
  // drained them, the CUDA runtime (NCCL's statically linked one included)
  // may already be torn down, and ncclCommDestroy then crashes (why PyTorch
  // stopped calling it at exit: pytorch/pytorch#8352, #141511). The driver
  // reclaims the communicators' memory when the process ends.
  static auto* comms = new std::map<std::vector<int>, std::vector<ncclComm_t>>;
  static std::mutex mu;
  std::lock_guard<std::mutex> lk(mu);
  auto it = comms->find(devices);
  if (it == comms->end()) {
    for (int d : devices)
      if (d < 0 || d >= cuda_device_count()) throw DeviceError(detail::device_absent("cuda:" + std::to_string(d)));
    std::vector<ncclComm_t> made(devices.size());
    AMLP_NCCL_CHECK(ncclCommInitAll(made.data(), static_cast<int>(devices.size()), devices.data()));
    it = comms->emplace(devices, std::move(made)).first;
  }
  return std::vector<void*>(it->second.begin(), it->second.end());
}

}  // namespace amlp::cuda
