// collectives.cpp — a GPU's collectives (core/backend/collectives.h): NCCL
// communicators and all-reduces on its stream, peer-to-peer copies, and the
// wait that a failed rank ends (nccl_comms.h): a rank whose launch fails
// aborts its clique, and every rank's wait polls its communicators' health
// beside its event, so no rank is left spinning on a peer that will never
// come.
#include <algorithm>
#include <chrono>
#include <memory>
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

class CudaCollectives final : public Collectives {
 public:
  explicit CudaCollectives(CudaBackend& be) : be_(be) {}
  std::vector<void*> collective_comms(const std::vector<int>& devices) override;
  void all_reduce_nccl(const float* x, float* y, size_t n, void* comm) override;
  bool copy_from_device(void* dst, const void* src, size_t bytes, Backend& src_backend) override;

 private:
  CudaBackend& be_;
};

std::vector<void*> CudaCollectives::collective_comms(const std::vector<int>& devices) {
#ifdef ASYNCMLP_WITH_NCCL
  return nccl_communicators(devices);
#else
  (void)devices;
  return {};
#endif
}

// ncclAllReduce on the stream; a failed launch aborts every rank of the clique.
void CudaCollectives::all_reduce_nccl(const float* x, float* y, size_t n, void* comm) {
  cudaStream_t s = be_.stream();
#ifdef ASYNCMLP_WITH_NCCL
  if (n == 0) return;  // every rank has the same n: all skip together
  {
    std::lock_guard<std::mutex> lk(be_.comms_mu_);
    if (std::find(be_.comms_used_.begin(), be_.comms_used_.end(), comm) == be_.comms_used_.end())
      be_.comms_used_.push_back(comm);
  }
  be_.uses_collectives_.store(true, std::memory_order_release);
  if (const std::string why = nccl_failure({comm}); !why.empty()) {
    be_.forget_comm(comm);
    throw Error(why);
  }
  try {
    AMLP_NCCL_CHECK(ncclAllReduce(x, y, n, ncclFloat, ncclSum, static_cast<ncclComm_t>(comm), s));
  } catch (const std::exception& e) {  // the other ranks would wait for this one forever
    const std::string why = "a rank failed (" + be_.name_ + ": " + e.what() + "); every rank of the all-reduce aborted";
    nccl_abort_clique(comm, why);
    be_.forget_comm(comm);
    throw Error(why);
  }
#else
  (void)x, (void)y, (void)n, (void)comm, (void)s;
  throw Error(be_.name_ + " cannot run an NCCL all-reduce: this build has no NCCL (nccl.h / libnccl not found)");
#endif
}

// From another GPU, on this GPU's stream (the queue made it wait for the
// producer's event). With peer access on, the copy goes over NVLink/PCIe
// directly; without it, cudaMemcpyPeerAsync stages through the host itself.
// The source block goes back to its pool once this op is launched, and the
// pool hands it out again in the *source's* stream order: so the source
// stream waits for this copy before any later work of its own.
bool CudaCollectives::copy_from_device(void* dst, const void* src, size_t bytes, Backend& src_backend) {
  auto* from = dynamic_cast<CudaBackend*>(&src_backend);
  if (!from) return false;
  cudaStream_t s = be_.stream();
  if (bytes == 0) return true;
  if (from == &be_) {
    AMLP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
    return true;
  }
  cudaStream_t src_stream = from->stream();
  if (be_.peer_checked_.insert(from->index_).second) {  // once per source GPU (worker thread only)
    int can = 0;
    AMLP_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, be_.index_, from->index_));
    if (can) {
      const cudaError_t e = cudaDeviceEnablePeerAccess(from->index_, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled) (void)cudaGetLastError();
      else AMLP_CUDA_CHECK(e);
    }
  }
  AMLP_CUDA_CHECK(cudaMemcpyPeerAsync(dst, be_.index_, src, from->index_, bytes, s));
  cudaEvent_t done = nullptr;
  AMLP_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  const cudaError_t rec = cudaEventRecord(done, s);
  const cudaError_t wait = rec == cudaSuccess ? cudaStreamWaitEvent(src_stream, done, 0) : rec;
  AMLP_CUDA_CHECK_LOG(cudaEventDestroy(done));  // released once the GPU passed it
  AMLP_CUDA_CHECK(wait);
  return true;
}

std::unique_ptr<Collectives> make_collectives(CudaBackend& be) { return std::make_unique<CudaCollectives>(be); }

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
