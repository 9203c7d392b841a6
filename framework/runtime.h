// runtime.h — the devices a process has: for each, a backend, a pool and a
// queue. Contexts are made lazily on first use (a CUDA context only for a GPU
// that exists), live until exit, and are drained before they are destroyed.
//
//   DeviceContext& c = context(Device::cpu(1));
//   c.queue.pause(); ... c.queue.resume();
//   waitall();                       // every queue of every device
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "framework/backend.h"
#include "framework/device.h"
#include "framework/memory.h"
#include "framework/queue.h"

namespace amlp {

// Lets a Pool draw from its backend without owning it.
struct ForwardingAllocator : RawAllocator {
  explicit ForwardingAllocator(RawAllocator* to) : to_(to) {}
  void* raw_alloc(size_t bytes) override { return to_->raw_alloc(bytes); }
  void raw_free(void* p) noexcept override { to_->raw_free(p); }

 private:
  RawAllocator* to_;
};

struct DeviceContext {
  DeviceContext(Device d, std::unique_ptr<Backend> b);
  ~DeviceContext();
  Device device;
  std::unique_ptr<Backend> backend;
  Pool pool;    // allocates through backend
  Queue queue;  // synchronises through backend
};

DeviceContext& context(Device d);        // throws DeviceError for an absent device
std::vector<DeviceContext*> live_contexts();

// Blocks until every queue of every device is empty; rethrows a kept error.
void waitall();

// Synchronous mode for every queue, present and future (like
// CUDA_LAUNCH_BLOCKING=1 / MXNet's NaiveEngine). Also on when the
// environment has ASYNCMLP_BLOCKING=1.
void set_blocking(bool on);
bool blocking();

// Back-pressure for every queue, present and future (0 = unbounded).
void set_max_pending(uint64_t ops, size_t bytes);

// Per-device and process measurements, cheap enough for every batch.
MemoryStats memory_stats(Device d);
QueueStats queue_stats(Device d);
void reset_peaks(Device d);

// Free and total memory of a GPU as the driver reports them (cudaMemGetInfo);
// false for a CPU device or when unavailable.
bool device_memory_info(Device d, size_t* free_bytes, size_t* total_bytes);

// TF32 tensor-core math for CUDA GEMMs (off by default; no effect on the CPU).
void set_tf32(bool on);
bool tf32();

// Factory defined by the CUDA backend (or a stub that throws without it).
std::unique_ptr<Backend> make_cuda_backend(int index);
std::unique_ptr<Backend> make_cpu_backend(int index);

}  // namespace amlp
