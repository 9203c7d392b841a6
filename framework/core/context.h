// context.h — the engine's view of a device: its backend, pool and queues.
// Contexts are made lazily on first use (a CUDA context only for a GPU that
// exists), live until exit, and are drained before they are destroyed. A CPU
// device may have a second queue, its data queue (DataQueueGuard), made on
// first use: its own worker, the same pool and backend.
//
//   DeviceContext& c = context(Device::cpu(1));
//   c.pool.allocate(bytes);  c.queue.push(...);
//   Queue& q = current_queue(c);   // c.queue, or its data queue under a DataQueueGuard
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "framework/core/backend/backend.h"
#include "framework/core/memory/memory.h"
#include "framework/core/queue/queue.h"
#include "framework/device.h"

namespace amlp {

// Lets a Pool draw from its backend without owning it.
struct ForwardingAllocator : RawAllocator {
  explicit ForwardingAllocator(RawAllocator* to) : to_(to) {}
  void* raw_alloc(size_t bytes) override { return to_->raw_alloc(bytes); }
  std::string why_failed() const override { return to_->why_failed(); }
  void raw_free(void* p) noexcept override { to_->raw_free(p); }
  void before_raw_free() noexcept override { to_->before_raw_free(); }
  bool host_memory() const override { return to_->host_memory(); }
  bool prepare_write(void* p) noexcept override { return to_->prepare_write(p); }
  void add_fresh_stats(MemoryStats& s) const override { to_->add_fresh_stats(s); }

 private:
  RawAllocator* to_;
};

struct DeviceContext {
  DeviceContext(Device d, std::unique_ptr<Backend> b);
  Device device;
  std::unique_ptr<Backend> backend;
  Pool pool;    // allocates through backend
  Queue queue;  // destroyed before the pool: it drains and joins first

  // The data queue, made (with the current settings) on first use; throws
  // DeviceError on a CUDA device. Thread-safe.
  Queue& data_queue();
  Queue* data_queue_if_made() const { return data_.load(std::memory_order_acquire); }
  std::vector<Queue*> queues() const;  // queue, then the data queue if made

  // The thread that drives this device (detail::check_frontend); no thread
  // while none does.
  std::atomic<std::thread::id> frontend{};

 private:
  std::mutex data_mu_;
  std::atomic<Queue*> data_{nullptr};
  std::unique_ptr<Queue> data_queue_;  // declared last, destroyed first (drained like queue)
};

DeviceContext& context(Device d);        // throws DeviceError for an absent device
std::vector<DeviceContext*> live_contexts();
// Every queue that serves a device, in the order they were made (queue_registry.h).
std::vector<Queue*> live_queues();
// The queue an op this thread queues on `c` goes to (DataQueueGuard).
Queue& current_queue(DeviceContext& c);

namespace detail {
// The frontend threading contract (framework/asyncmlp.h): one thread queues
// the ops of a device and reads its tensors' engine state. The first thread
// that does so drives the device until that thread ends; from any other
// thread this throws Error, naming the device and both threads. Called by
// enqueue for the op's device and every declared tensor's, and by
// Tensor::wait_to_read.
void check_frontend(DeviceContext& c);
// fork(): a device's worker does not survive into a child process (only the
// forking thread does), so the library marks the child's copy unusable, and
// this throws Error there (called by context(), check_frontend and waitall).
// Before a fork, every queue that is not paused is drained: no worker is
// inside a kernel as the process forks (OpenBLAS, whose own fork handler runs
// after the library's, stops its threads safely only when no product is
// running in them), so the parent goes on working.
void check_not_forked();
}  // namespace detail

// The backend that serves `d` (throws DeviceError for a device the build
// cannot serve). Defined by registry/backends.cpp, the one file that names
// the concrete backends.
std::unique_ptr<Backend> make_backend(Device d);

}  // namespace amlp
