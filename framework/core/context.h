// context.h — the engine's view of a device: its backend, pool and queue.
// Contexts are made lazily on first use (a CUDA context only for a GPU that
// exists), live until exit, and are drained before they are destroyed.
//
//   DeviceContext& c = context(Device::cpu(1));
//   c.pool.allocate(bytes);  c.queue.push(...);
#pragma once
#include <memory>
#include <vector>

#include "framework/core/backend.h"
#include "framework/core/memory.h"
#include "framework/core/queue.h"
#include "framework/device.h"

namespace amlp {

// Lets a Pool draw from its backend without owning it.
struct ForwardingAllocator : RawAllocator {
  explicit ForwardingAllocator(RawAllocator* to) : to_(to) {}
  void* raw_alloc(size_t bytes) override { return to_->raw_alloc(bytes); }
  void raw_free(void* p) noexcept override { to_->raw_free(p); }
  void before_raw_free() noexcept override { to_->before_raw_free(); }
  bool host_memory() const override { return to_->host_memory(); }

 private:
  RawAllocator* to_;
};

struct DeviceContext {
  DeviceContext(Device d, std::unique_ptr<Backend> b);
  Device device;
  std::unique_ptr<Backend> backend;
  Pool pool;    // allocates through backend
  Queue queue;  // declared last, destroyed first: it drains and joins before the pool goes
};

DeviceContext& context(Device d);        // throws DeviceError for an absent device
std::vector<DeviceContext*> live_contexts();

// Factories: defined by the CUDA backend (or a stub that throws without it)
// and by the CPU backend.
std::unique_ptr<Backend> make_cuda_backend(int index);
std::unique_ptr<Backend> make_cpu_backend(int index);

}  // namespace amlp
