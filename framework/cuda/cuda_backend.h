// cuda_backend.h — the kernel table for one GPU (private to framework/cuda).
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
// wait on it (wait_on_device). copy_to_host/copy_from_host and check_finite are the exceptions
// that wait for the GPU: they must hand back host data or a verdict.
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
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "framework/core/backend.h"
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
  // Settings its queue and the runtime tell it (any thread): synchronous
  // mode (an event and a stream synchronisation after every op, no graphs)
  // and TF32 for the next GEMM.
  void set_blocking(bool on) override { blocking_.store(on, std::memory_order_release); }
  void set_tf32(bool on) override { want_tf32_.store(on, std::memory_order_release); }

  // Kernels — worker thread; they launch and return.
  void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
            int ldb, float beta, float* C, int ldc) override;
  void fill(float* y, size_t n, float value) override;
  // linalg.cpp: through cuBLASLt with the epilogue fused (lt_gemm.h), or
  // composed as Backend's where it has no plan.
  void linear(const float* x, const float* w, const float* b, float* y, int B, int in, int out, bool relu) override;
  void linear_grad_weight(const float* dz, const float* x, float* dw, float* db, int B, int in, int out) override;
  LtGemms::Stats lt_stats() const { return lt_.stats(); }
  void add_bias(const float* x, const float* b, float* y, int rows, int cols) override;
  void relu(const float* x, float* y, size_t n) override;
  void relu_backward(const float* x, const float* dy, float* dx, size_t n) override;
  void bias_relu(float* y, const float* b, int rows, int cols) override;
  void relu_backward_sum_rows(const float* y, const float* dy, float* dz, float* db, int rows, int cols) override;
  void l2_loss(const float* pred, const float* label, float* loss, float* dpred, int rows, int cols) override;
  void l2_loss_backward(const float* pred, const float* label, const float* dloss, float* dpred, int rows,
                        int cols) override;
  void axpby(float alpha, const float* a, float beta, const float* b, float* y, size_t n) override;
  void add_scalar(const float* x, float s, float* y, size_t n) override;
  void sum_n(const float* const* xs, int k, float* y, size_t n) override;  // xs on this GPU
  // collectives.cpp: ncclAllReduce on the stream (a failed launch aborts
  // every rank of the clique); throws in a build without NCCL.
  void all_reduce_nccl(const float* x, float* y, size_t n, void* comm) override;
  std::vector<void*> collective_comms(const std::vector<int>& devices) override;
  void sum_rows(const float* x, float* y, int rows, int cols) override;
  void sum(const float* x, float* y, size_t n, float scale) override;
  void broadcast_scalar(const float* x, float scale, float* y, size_t n) override;
  void random_normal(float* y, size_t n, uint64_t seed, uint64_t offset, float mean, float stddev) override;
  void random_uniform(float* y, size_t n, uint64_t seed, uint64_t offset, float lo, float hi) override;
  void sgd_update(float* w, const float* g, float* mom, size_t n, float lr, float momentum, float wd,
                  float rescale) override;
  void sgd_update_multi(const SgdParam* ps, int k, float lr, float momentum, float wd, float rescale) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  // From another GPU's memory: cudaMemcpyPeerAsync on this stream; the
  // source's stream then waits for it (its pool reuses blocks in its order).
  bool copy_from_device(void* dst, const void* src, size_t bytes, Backend& src_backend) override;
  // Both return only when the host buffer was fully written / read (through
  // pinned staging, in chunks of at most kMaxStagingBytes).
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void copy_from_host(void* dst, const void* host_src, size_t bytes) override;
  // Into alloc_host() memory: launched on the stream, complete with the op.
  void copy_to_host_async(void* host_dst, const void* src, size_t bytes) override;
  void check_finite(const float* x, size_t n, const char* what) override;
  // A timing event recorded on the stream (worker); read and released on any thread.
  void timer_record(TimerPoint& p) override;
  double timer_seconds(const TimerPoint& from, const TimerPoint& to) override;
  void timer_release(TimerPoint& p) noexcept override;

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
  // colsum_: relu_backward_sum_rows' per-chunk column sums, then a ticket per column group.
  static constexpr size_t kColsumPartials = size_t(64) << 10;  // doubles
  static constexpr int kColsumTickets = 4096;

 private:
  void launch_graph(int slot, uint64_t last_seq, const char* what);  // worker: the slot's graph, traced
  cudaStream_t stream() const;  // throws if worker_start() failed
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
  std::atomic<bool> want_tf32_{false};  // set_tf32
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
};

}  // namespace amlp::cuda
