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

namespace {

// Never destroyed, on purpose. As a static made after the device registry,
// the cache would be destroyed before the registry drains the queues at
// exit, with all-reduces perhaps still in flight; and once the registry has
// drained them, the CUDA runtime (NCCL's statically linked one included)
// may already be torn down, and ncclCommDestroy then crashes (why PyTorch
// stopped calling it at exit: pytorch/pytorch#8352, #141511). The driver
// reclaims the communicators' memory when the process ends.
struct Registry {
  std::mutex mu;
  std::map<std::vector<int>, std::vector<ncclComm_t>> cliques;  // live ones, by device list
  std::map<void*, std::vector<int>> clique_of;                    // every live communicator
  std::map<void*, std::string> aborted;                           // communicator -> why
};

Registry& registry() {
  static auto* r = new Registry;
  return *r;
}

void abort_locked(Registry& r, void* comm, const std::string& why) {
  auto at = r.clique_of.find(comm);
  if (at == r.clique_of.end()) return;  // aborted already (or not ours)
  const std::vector<int> key = at->second;
  for (ncclComm_t c : r.cliques[key]) {
    r.aborted[c] = why;
    r.clique_of.erase(c);
    (void)ncclCommAbort(c);  // a rank spinning in a collective exits
  }
  r.cliques.erase(key);
}

}  // namespace

std::vector<void*> nccl_communicators(const std::vector<int>& devices) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  auto it = r.cliques.find(devices);
  if (it == r.cliques.end()) {
    for (int d : devices)
      if (d < 0 || d >= cuda_device_count()) throw DeviceError(detail::device_absent("cuda:" + std::to_string(d)));
    std::vector<ncclComm_t> made(devices.size());
    AMLP_NCCL_CHECK(ncclCommInitAll(made.data(), static_cast<int>(devices.size()), devices.data()));
    it = r.cliques.emplace(devices, std::move(made)).first;
    for (ncclComm_t c : it->second) {
      r.clique_of[c] = devices;
      r.aborted.erase(c);  // an address an aborted communicator had
    }
  }
  return std::vector<void*>(it->second.begin(), it->second.end());
}

void nccl_abort_clique(void* comm, const std::string& why) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  abort_locked(r, comm, why);
}

std::string nccl_failure(const std::vector<void*>& comms, void** failed) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  for (void* c : comms) {
    if (failed) *failed = c;
    if (auto a = r.aborted.find(c); a != r.aborted.end()) return a->second;
    if (!r.clique_of.count(c)) continue;  // not a live communicator of ours
    ncclResult_t async = ncclSuccess;
    if (ncclCommGetAsyncError(static_cast<ncclComm_t>(c), &async) != ncclSuccess) continue;
    if (async == ncclSuccess || async == ncclInProgress) continue;
    const std::string why = std::string("NCCL failed asynchronously: ") + ncclGetErrorString(async) +
                            " (every rank of the all-reduce aborted)";
    abort_locked(r, c, why);
    return why;
  }
  return "";
}

}  // namespace amlp::cuda
