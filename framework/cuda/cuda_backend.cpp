// cuda_backend.cpp — see cuda_backend.h.
#include "framework/cuda/cuda_backend.h"

#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "framework/util/env.h"
#include "framework/cuda/cuda_check.h"
#include "framework/cuda/device_guard.h"
#include "framework/cuda/sgemm.h"  // math_mode
#include "framework/error.h"
#include "framework/runtime.h"
#include "framework/trace.h"

namespace amlp::cuda {

namespace {

constexpr size_t kMinStagingBytes = size_t(1) << 20;

// True once the CUDA runtime is being torn down at process exit (its atexit
// handler may run before the static registry that owns the backends): every
// call would fail, and the driver reclaims everything anyway.
bool runtime_gone() {
  int d = 0;
  const cudaError_t e = cudaGetDevice(&d);
  if (e == cudaErrorCudartUnloading || e == cudaErrorContextIsDestroyed) {
    (void)cudaGetLastError();
    return true;
  }
  return false;
}

}  // namespace

CudaBackend::CudaBackend(int index)
    : index_(index),
      name_("cuda:" + std::to_string(index)),
      times_(name_),
      host_blocks_([this](size_t bytes) { return pin(bytes); }, [](void* p) { unpin(p); }, kMaxCachedPinnedBytes),
      collectives_(make_collectives(*this)) {
  add_linalg_kernels(kernels);
  add_elementwise_kernels(kernels);
  add_reduce_kernels(kernels);
  add_loss_kernels(kernels);
  add_optimizer_kernels(kernels);
  add_random_kernels(kernels);
  add_check_finite_kernels(kernels);
  complete_kernels(kernels);
}

CudaBackend::~CudaBackend() {
  if (!stream_ && !blas_ && !rng_ && !scratch_ && host_blocks_.stats().allocations == 0)
    return;  // never started: no CUDA call at all
  if (runtime_gone()) {  // leak the handles on purpose: their deleters would only fail
    host_blocks_.abandon();
    (void)staging_.release(), (void)host_slot_.release();
    (void)scratch_.release(), (void)colsum_.release(), (void)rng_.release(), (void)blas_.release();
    (void)blas_workspace_.release(), (void)stream_.release();
    events_.abandon();
    for (StreamGraph& g : graphs_) g.abandon();
    times_.abandon();
    lt_.abandon();
    for (EventPtr& e : timer_events_) (void)e.release();
    return;
  }
  DeviceGuard guard(index_, std::nothrow);
  for (StreamGraph& g : graphs_) g.reset();
  if (stream_) AMLP_CUDA_CHECK_LOG(cudaStreamSynchronize(stream_.get()));
  events_.clear();
  times_.clear();
  host_blocks_.clear();
  timer_free_.clear();
  timer_events_.clear();
  staging_.reset();
  host_slot_.reset();
  scratch_.reset();
  colsum_.reset();
  rng_.reset();
  lt_.stop();
  blas_.reset();
  blas_workspace_.reset();
  stream_.reset();
}

// --- memory (frontend thread) ---------------------------------------------------------

void* CudaBackend::raw_alloc(size_t bytes) {
  DeviceGuard guard(index_);
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e == cudaErrorMemoryAllocation) {  // the Pool releases its cache and retries once
    (void)cudaGetLastError();
    return nullptr;
  }
  if (e != cudaSuccess) throw_failure(__FILE__, __LINE__, "cudaMalloc(&p, bytes)", cudaGetErrorString(e), e);
  return p;
}

void CudaBackend::before_raw_free() noexcept {
  if (runtime_gone()) return;
  DeviceGuard guard(index_, std::nothrow);
  // A cached block's last kernels were launched but may still run: let them
  // finish before any memory goes back to the driver (once per batch of frees).
  AMLP_CUDA_CHECK_LOG(cudaDeviceSynchronize());
}

void CudaBackend::raw_free(void* p) noexcept {
  if (runtime_gone()) return;
  DeviceGuard guard(index_, std::nothrow);
  AMLP_CUDA_CHECK_LOG(cudaFree(p));
}

// Pinned blocks for asynchronous copies, cached by size class (host_block_cache.h).
void* CudaBackend::alloc_host(size_t bytes) { return host_blocks_.get(bytes ? bytes : 1); }

void CudaBackend::free_host(void* p) noexcept {
  if (!p || runtime_gone()) return;
  host_blocks_.put(p);
}

void* CudaBackend::pin(size_t bytes) const {
  DeviceGuard guard(index_);
  void* p = nullptr;
  AMLP_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
  return p;
}

void CudaBackend::unpin(void* p) noexcept {
  if (runtime_gone()) return;
  AMLP_CUDA_CHECK_LOG(cudaFreeHost(p));
}

// --- the queue's hooks ------------------------------------------------------------------

void CudaBackend::worker_start() {
  try {
    AMLP_CUDA_CHECK(cudaSetDevice(index_));  // this worker thread stays on the device
    stream_ = make_stream();
    blas_ = make_cublas();
    AMLP_CUDA_CHECK(cublasSetStream(blas_.get(), stream_.get()));
    // After cublasSetStream (which resets it): a workspace of our own, so
    // cuBLAS allocates nothing per call.
    blas_workspace_ = device_alloc(kBlasWorkspaceBytes);
    AMLP_CUDA_CHECK(cublasSetWorkspace(blas_.get(), blas_workspace_.get(), kBlasWorkspaceBytes));
    AMLP_CUDA_CHECK(cublasSetMathMode(blas_.get(), math_mode(/*tf32=*/false)));
    tf32_ = false;
    lt_.start(stream_.get(), blas_workspace_.get(), kBlasWorkspaceBytes,  // shares cuBLAS's workspace
              env_settings().lt_epilogues);
    rng_ = make_curand(CURAND_RNG_PSEUDO_PHILOX4_32_10);
    AMLP_CUDA_CHECK(curandSetStream(rng_.get(), stream_.get()));
    scratch_ = device_alloc(kScratchBytes);
    const size_t colsum_bytes = kColsumPartials * sizeof(double) + kColsumTickets * sizeof(unsigned);
    colsum_ = device_alloc(colsum_bytes);
    AMLP_CUDA_CHECK(cudaMemsetAsync(colsum_.get(), 0, colsum_bytes, stream_.get()));  // the tickets start at 0
    AMLP_CUDA_CHECK(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, index_));
    host_slot_ = pinned_alloc(64);
    (void)staging(kMinStagingBytes);  // item() and small copies never pin memory mid-run
    started_ = true;
  } catch (const std::exception& e) {
    start_error_ = e.what();
    throw;
  }
}

void CudaBackend::before_op(uint64_t seq, const char* name) {
  nvtxRangePushA(name);
  nvtx_open_ = true;
  const bool tracing = started_ && trace::enabled();
  timing_ = tracing && !graphs_[0].capturing() && !graphs_[1].capturing();
  if (timing_) times_.begin(seq, name, stream_.get());
  for (StreamGraph& g : graphs_)  // recorded: its start mark, for the replays' device track
    if (tracing && g.capturing()) {
      g.mark(stream_.get(), name, /*start=*/true);
      marking_ = &g;
    }
}

void CudaBackend::after_op(uint64_t seq, bool tail) {
  if (nvtx_open_) {
    nvtxRangePop();
    nvtx_open_ = false;
  }
  if (!started_) return;
  const cudaError_t launch = cudaGetLastError();
  if (marking_) {
    StreamGraph* g = marking_;
    marking_ = nullptr;
    if (g->capturing()) g->mark(stream_.get(), nullptr, /*start=*/false);
  }
  if (timing_) {
    timing_ = false;
    times_.end(stream_.get());
    times_.drain();
  }
  if (graphs_[0].capturing() || graphs_[1].capturing()) {  // recorded, not run: the step's event follows its launch (capture_end)
    if (launch != cudaSuccess)
      throw_failure(__FILE__, __LINE__, "the op's launches (cudaGetLastError)", cudaGetErrorString(launch), launch);
    return;
  }
  last_run_ = seq;
  if (tail || seq >= last_recorded_ + kEventEvery || blocking_.load(std::memory_order_acquire)) {
    events_.record(seq, stream_.get());
    last_recorded_ = seq;
  }
  if (launch != cudaSuccess)
    throw_failure(__FILE__, __LINE__, "the op's launches (cudaGetLastError)", cudaGetErrorString(launch), launch);
  if (blocking_.load(std::memory_order_acquire))  // synchronous mode: a fault is reported at this op, by name
    AMLP_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
}

// Called after the worker launched op `seq` (the queue orders it after
// worker_start), from any thread: the frontend or another queue's worker,
// bound to another GPU or to none.
bool CudaBackend::is_complete(uint64_t seq) {
  if (!started_) return true;
  DeviceGuard guard(index_, std::nothrow);
  return events_.is_complete(seq, stream_.get());
}

void CudaBackend::wait_complete(uint64_t seq) {
  if (!started_) return;
  DeviceGuard guard(index_);  // wait with this GPU current
  // An op between two events: one is recorded now (the op was launched), unless
  // the stream is being recorded into a graph (every op before has one then).
  {
    std::lock_guard<std::mutex> lk(capture_mu_);
    if (!capturing_) events_.ensure(seq, stream_.get());
  }
  if (!uses_collectives_.load(std::memory_order_acquire)) events_.wait(seq, stream_.get());
  else wait_with_collectives(seq);  // collectives.cpp: a failed peer rank ends the wait
  times_.drain();  // the ops now finished: their GPU times join the trace
}

bool CudaBackend::wait_on_device(StreamSync& producer, uint64_t seq) {
  auto* other = dynamic_cast<CudaBackend*>(&producer);
  if (!other || !other->started_ || !started_) return false;
  return other->events_.stream_wait(seq, stream_.get());  // on this (the worker's) device
}

// The handle's math mode follows what the GEMM asks (the worker's view of it).
cublasHandle_t CudaBackend::blas(bool tf32) {
  if (tf32 != tf32_) {
    AMLP_CUDA_CHECK(cublasSetMathMode(blas_.get(), math_mode(tf32)));
    tf32_ = tf32;
  }
  return blas_.get();
}

cudaStream_t CudaBackend::stream() const {
  if (!started_)
    throw Error(name_ + " cannot run kernels: its worker failed to start (" +
                (start_error_.empty() ? std::string("not started") : start_error_) + ")");
  return stream_.get();
}

// --- stream copies (worker thread) ----------------------------------------------------------

void CudaBackend::copy(void* dst, const void* src, size_t bytes) {
  cudaStream_t s = stream();
  if (bytes == 0 || dst == src) return;
  AMLP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
}

void* CudaBackend::staging(size_t bytes) {
  if (staging_bytes_ < bytes) {  // the old buffer is idle: every use ends in a synchronize
    const size_t grown = std::min(std::max({bytes, 2 * staging_bytes_, kMinStagingBytes}), kMaxStagingBytes);
    staging_.reset();
    staging_bytes_ = 0;
    staging_ = pinned_alloc(std::max(grown, bytes));
    staging_bytes_ = std::max(grown, bytes);
  }
  return staging_.get();
}

void CudaBackend::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  cudaStream_t s = stream();
  auto* out = static_cast<char*>(host_dst);
  const auto* in = static_cast<const char*>(src);
  for (size_t off = 0; off < bytes;) {
    const size_t len = std::min(bytes - off, kMaxStagingBytes);
    void* pinned = staging(len);
    AMLP_CUDA_CHECK(cudaMemcpyAsync(pinned, in + off, len, cudaMemcpyDeviceToHost, s));
    AMLP_CUDA_CHECK(cudaStreamSynchronize(s));
    std::memcpy(out + off, pinned, len);
    off += len;
  }
}

void CudaBackend::copy_to_host_async(void* host_dst, const void* src, size_t bytes) {
  cudaStream_t s = stream();
  if (bytes) AMLP_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, s));
}

void CudaBackend::copy_from_host(void* dst, const void* host_src, size_t bytes) {
  cudaStream_t s = stream();
  auto* out = static_cast<char*>(dst);
  const auto* in = static_cast<const char*>(host_src);
  for (size_t off = 0; off < bytes;) {
    const size_t len = std::min(bytes - off, kMaxStagingBytes);
    void* pinned = staging(len);
    std::memcpy(pinned, in + off, len);
    AMLP_CUDA_CHECK(cudaMemcpyAsync(out + off, pinned, len, cudaMemcpyHostToDevice, s));
    AMLP_CUDA_CHECK(cudaStreamSynchronize(s));  // staging is free again; host_src fully read
    off += len;
  }
}

// --- timers (DeviceTimer) ------------------------------------------------------------------

void CudaBackend::timer_record(TimerPoint& p) {
  cudaStream_t s = stream();
  cudaEvent_t e = nullptr;
  {
    std::lock_guard<std::mutex> lk(timer_mu_);
    if (!timer_free_.empty()) {
      e = timer_free_.back();
      timer_free_.pop_back();
    } else {
      timer_events_.push_back(make_timing_event());  // the worker: this GPU is current
      e = timer_events_.back().get();
    }
  }
  p.event = e;  // released with the point even if the record fails
  AMLP_CUDA_CHECK(cudaEventRecord(e, s));
  p.recorded = true;
}

double CudaBackend::timer_seconds(const TimerPoint& from, const TimerPoint& to) {
  float ms = 0;
  AMLP_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(from.event), static_cast<cudaEvent_t>(to.event)));
  return double(ms) * 1e-3;
}

void CudaBackend::timer_release(TimerPoint& p) noexcept {
  if (!p.event) return;
  std::lock_guard<std::mutex> lk(timer_mu_);
  timer_free_.push_back(static_cast<cudaEvent_t>(p.event));
  p.event = nullptr;
}

}  // namespace amlp::cuda
