// collectives.cpp — the CUDA backend's NCCL entries (backend.h's
// collective_comms and all_reduce_nccl) and the wait that a failed rank ends
// (nccl_comms.h): a rank whose launch fails aborts its clique, and every
// rank's wait polls its communicators' health beside its event, so no rank
// is left spinning on a peer that will never come.
#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "framework/cuda/cuda_backend.h"
#include "framework/cuda/cuda_check.h"
#include "framework/error.h"
#ifdef ASYNCMLP_WITH_NCCL
#include "framework/cuda/nccl_check.h"
#include "framework/cuda/nccl_comms.h"
#endif

namespace amlp::cuda {

std::vector<void*> CudaBackend::collective_comms(const std::vector<int>& devices) {
#ifdef ASYNCMLP_WITH_NCCL
  return nccl_communicators(devices);
#else
  (void)devices;
  return {};
#endif
}

void CudaBackend::all_reduce_nccl(const float* x, float* y, size_t n, void* comm) {
  cudaStream_t s = stream();
#ifdef ASYNCMLP_WITH_NCCL
  if (n == 0) return;  // every rank has the same n: all skip together
  {
    std::lock_guard<std::mutex> lk(comms_mu_);
    if (std::find(comms_used_.begin(), comms_used_.end(), comm) == comms_used_.end()) comms_used_.push_back(comm);
  }
  uses_collectives_.store(true, std::memory_order_release);
  if (const std::string why = nccl_failure({comm}); !why.empty()) {
    forget_comm(comm);
    throw Error(why);
  }
  try {
    AMLP_NCCL_CHECK(ncclAllReduce(x, y, n, ncclFloat, ncclSum, static_cast<ncclComm_t>(comm), s));
  } catch (const std::exception& e) {  // the other ranks would wait for this one forever
    const std::string why = "a rank failed (" + name_ + ": " + e.what() + "); every rank of the all-reduce aborted";
    nccl_abort_clique(comm, why);
    forget_comm(comm);
    throw Error(why);
  }
#else
  (void)x, (void)y, (void)n, (void)comm, (void)s;
  throw Error(name_ + " cannot run an NCCL all-reduce: this build has no NCCL (nccl.h / libnccl not found)");
#endif
}

void CudaBackend::forget_comm(void* comm) {
  std::lock_guard<std::mutex> lk(comms_mu_);
  comms_used_.erase(std::remove(comms_used_.begin(), comms_used_.end(), comm), comms_used_.end());
}

void CudaBackend::wait_with_collectives(uint64_t seq) {
#ifdef ASYNCMLP_WITH_NCCL
  std::vector<void*> comms;
  {
    std::lock_guard<std::mutex> lk(comms_mu_);
    comms = comms_used_;
  }
  // Reported once per device: an aborted communicator is gone.
  const auto fail_if_aborted = [&] {
    void* failed = nullptr;
    if (const std::string why = nccl_failure(comms, &failed); !why.empty()) {
      forget_comm(failed);
      throw Error(name_ + ": " + why);
    }
  };
  // Short pauses: a wait ends at most ~100 us after the GPU got there.
  auto pause = std::chrono::microseconds(5);
  while (!events_.is_complete(seq, stream_.get())) {
    fail_if_aborted();
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(100));
  }
  events_.wait(seq, stream_.get());  // reports a CUDA error of the ops up to seq
  fail_if_aborted();  // an aborted rank's kernels exit early: what they wrote is not the sum
#else
  events_.wait(seq, stream_.get());
#endif
}

}  // namespace amlp::cuda
