// cuda_backend.h — one GPU as a device (private to framework/cuda): its
// memory, its stream and its collectives; its kernels are in the file of
// their concept (elementwise.cu, reduce.cu, ..., linalg.cpp), each ending
// with the function that puts them into the table (core/backend/kernels.h).
//
// One non-blocking CUDA stream per device. The device's queue worker calls
// worker_start() once (binds the device, makes the stream, the cuBLAS handle,
// the cuRAND Philox generator and the scratch buffers: nothing CUDA happens
// at construction, so a machine without a GPU never gets here), then for each
// op before_op() (NVTX push), the kernel function — which only *launches*
// onto the stream — and after_op() (launch check, NVTX pop, a completion
// event every kEventEvery ops and after the last op queued). Completion is
// answered from the first event at or after the op: is_complete(seq) and
// wait_complete(seq) on any thread; another GPU's worker makes its stream
// wait on it (wait_on_device). copy_to_host/copy_from_host and the finiteness
// check are the exceptions that wait for the GPU: they must hand back host
// data or a verdict.
//
// raw_alloc/raw_free come from whichever thread draws on the Pool — the
// frontend as it queues an op (allocation policy enqueue), the worker as it
// starts one (policy run), any thread that empties the cache — and switch
// device with a guard. A block the pool hands out again is safe to reuse at
// once: every op runs on this one stream, in launch order.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "framework/core/backend/backend.h"
#include "framework/cuda/cuda_handles.h"
#include "framework/cuda/device_times.h"
#include "framework/cuda/event_ring.h"
#include "framework/cuda/host_block_cache.h"
#include "framework/cuda/lt_gemm.h"
#include "framework/cuda/stream_graph.h"

namespace amlp::cuda {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int index);  // no CUDA call here
  ~CudaBackend() override;          // drains the stream; never throws
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  // RawAllocator — any thread (the Pool's caller; see the top of this file).
  void* raw_alloc(size_t bytes) override;  // nullptr when the GPU is out of memory
  void raw_free(void* p) noexcept override;
  void before_raw_free() noexcept override;  // one device synchronisation before a batch of frees
  void* alloc_host(size_t bytes) override;   // pinned, from a per-device cache
  void free_host(void* p) noexcept override;  // back to the cache
  HostBlockCache::Stats host_block_stats() const { return host_blocks_.stats(); }

  // StreamSync — worker thread, except is_complete and wait_complete (any thread).
  void worker_start() override;
  void before_op(uint64_t seq, const char* name) override;
  void after_op(uint64_t seq, bool tail) override;
  bool asynchronous() const override { return true; }
  bool is_complete(uint64_t seq) override;
  void wait_complete(uint64_t seq) override;
  bool wait_on_device(StreamSync& producer, uint64_t seq) override;
  // Step graphs (stream_graph.h): not in synchronous mode.
  bool capture_begin(int slot) override;
  void capture_end(int slot, uint64_t last_seq) override;
  bool replay(int slot, uint64_t last_seq) override;
  void drop_graph() noexcept override;
  // Synchronous mode, set by its queue (any thread): an event and a stream
  // synchronisation after every op, no graphs.
  void set_blocking(bool on) override { blocking_.store(on, std::memory_order_release); }

  // Stream copies — worker thread. copy and copy_to_host_async only launch;
  // copy_to_host and copy_from_host return only when the host buffer was
  // fully written / read (through pinned staging, in chunks of at most
  // kMaxStagingBytes).
  void copy(void* dst, const void* src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void copy_from_host(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host_async(void* host_dst, const void* src, size_t bytes) override;
  // A timing event recorded on the stream (worker); read and released on any thread.
  void timer_record(TimerPoint& p) override;
  double timer_seconds(const TimerPoint& from, const TimerPoint& to) override;
  void timer_release(TimerPoint& p) noexcept override;

  // collectives.cpp: NCCL all-reduces on the stream and peer copies.
  Collectives* collectives() override { return collectives_.get(); }

  // For the kernel bodies (worker thread; each .cu file casts the Backend& it
  // gets to this type): the device state they launch with. stream() throws
  // if worker_start() failed, so a kernel calls it first.
  cudaStream_t stream() const;
  // The cuBLAS handle, its math mode set to TF32 or full FP32 first.
  cublasHandle_t blas(bool tf32);
  curandGenerator_t rng() const { return rng_.get(); }
  LtGemms& lt() { return lt_; }  // the fused Dense GEMMs (lt_gemm.h)
  LtGemms::Stats lt_stats() const { return lt_.stats(); }
  void* scratch() const { return scratch_.get(); }  // see kScratchBytes
  void* colsum() const { return colsum_.get(); }    // see kColsumPartials
  void* host_slot() const { return host_slot_.get(); }  // 64 pinned bytes
  int sms() const { return sms_; }  // the GPU's multiprocessors (grid sizing)

  // An op's completion event is recorded every kEventEvery ops, after the
  // last op queued (a blocker waits there) and in synchronous mode; a waiter
  // for an op in between waits on the next event, or records one (EventRing::ensure).
  static constexpr uint64_t kEventEvery = 8;
  static constexpr size_t kBlasWorkspaceBytes = size_t(32) << 20;  // cuBLAS's advice for Hopper
  static constexpr size_t kMaxStagingBytes = size_t(64) << 20;
  static constexpr size_t kMaxCachedPinnedBytes = size_t(256) << 20;  // idle pinned blocks kept per GPU
  // scratch_: [sum partials (kMaxSumBlocks doubles) | check_finite's slot]
  static constexpr int kMaxSumBlocks = 1024;
  static constexpr size_t kSumPartialBytes = kMaxSumBlocks * sizeof(double);
  static constexpr size_t kScratchBytes = kSumPartialBytes + 256;
  // colsum_: the fused ReLU backward's per-chunk column sums (reduce.cu), then a ticket per column group.
  static constexpr size_t kColsumPartials = size_t(64) << 10;  // doubles
  static constexpr int kColsumTickets = 4096;

 private:
  friend class CudaCollectives;  // collectives.cpp
  void launch_graph(int slot, uint64_t last_seq, const char* what);  // worker: the slot's graph, traced
  void* pin(size_t bytes) const;        // cudaHostAlloc, portable
  static void unpin(void* p) noexcept;  // cudaFreeHost
  // Once this device launched a collective: waits by polling its event and
  // the communicators' health, so a peer rank that failed ends the wait.
  void wait_with_collectives(uint64_t seq);
  void forget_comm(void* comm);  // an aborted communicator, once reported
  void* staging(size_t bytes);  // pinned, grown on demand up to kMaxStagingBytes

  const int index_;
  const std::string name_;  // "cuda:N"
  std::atomic<bool> started_{false};  // worker_start() succeeded
  std::string start_error_;
  bool nvtx_open_ = false;
  bool tf32_ = false;       // worker: the handle's current math mode
  std::atomic<bool> blocking_{false};   // set_blocking: the queue's synchronous mode
  std::set<int> peer_checked_;  // source GPUs whose peer access was looked at (worker thread)

  // Owned handles; released in ~CudaBackend in reverse order, after a drain.
  StreamPtr stream_;
  CublasPtr blas_;
  DeviceBuffer blas_workspace_;
  LtGemms lt_;  // the fused Dense GEMMs; shares blas_workspace_
  CurandPtr rng_;
  DeviceBuffer scratch_;          // sum partials (kMaxSumBlocks doubles), then the check_finite slot
  DeviceBuffer colsum_;           // kColsumPartials doubles, kColsumTickets tickets (zeroed once)
  int sms_ = 1;                   // the GPU's multiprocessors (grid sizing)
  PinnedBuffer host_slot_;        // check_finite's verdict and value
  PinnedBuffer staging_;
  size_t staging_bytes_ = 0;
  EventRing events_;
  StreamGraph graphs_[2];  // the queue's steady step, in its graph slots (worker thread)
  DeviceTimes times_;  // each op's GPU start and end while tracing
  bool timing_ = false;  // worker: the op being run has its start event
  StreamGraph* marking_ = nullptr;  // worker: the graph recording the op being run has its start mark
  std::mutex capture_mu_;               // a waiter's event record never lands inside a capture
  bool capturing_ = false;              // under capture_mu_: a graph is recording the stream
  uint64_t last_run_ = 0, last_recorded_ = 0;  // worker: the last op after_op saw / gave an event
  HostBlockCache host_blocks_;
  std::atomic<bool> uses_collectives_{false};
  std::mutex comms_mu_;
  std::vector<void*> comms_used_;  // every communicator this device launched on
  std::mutex timer_mu_;                  // timer_release may come from any thread
  std::vector<EventPtr> timer_events_;   // every timing event made, destroyed with the stream
  std::vector<cudaEvent_t> timer_free_;  // released, ready to be recorded again
  std::unique_ptr<Collectives> collectives_;  // a CudaCollectives (collectives.cpp)
};

// collectives.cpp: the device's collectives (NCCL where the build has it).
std::unique_ptr<Collectives> make_collectives(CudaBackend& be);

// Each kernel file's filler: puts that file's kernels into the table
// (core/backend/kernels.h).
void add_linalg_kernels(KernelTable& t);        // linalg.cpp: cuBLAS, cuBLASLt
void add_elementwise_kernels(KernelTable& t);   // elementwise.cu
void add_reduce_kernels(KernelTable& t);        // reduce.cu
void add_loss_kernels(KernelTable& t);          // loss.cu
void add_optimizer_kernels(KernelTable& t);     // optimizer.cu
void add_random_kernels(KernelTable& t);        // random.cu
void add_check_finite_kernels(KernelTable& t);  // check_finite.cu

}  // namespace amlp::cuda
