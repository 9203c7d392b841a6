// context.cpp — the registry of device contexts (context.h).
#include "framework/core/context.h"

#include <pthread.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <string>
#include <mutex>

#include "framework/util/env.h"
#include "framework/core/queue/queue_registry.h"
#include "framework/core/memory/segments.h"
#include "framework/core/settings.h"
#include "framework/error.h"
#include "framework/runtime.h"

namespace amlp {

namespace {

constexpr int kMaxCuda = 16;

// detail::check_not_forked: set in a child of fork() by the handler below.
std::atomic<bool> forked_child{false};

// Contexts live until exit; all queues are resumed and drained, then the
// contexts are destroyed in reverse order of creation.
struct Registry {
  std::mutex mu;
  std::array<std::unique_ptr<DeviceContext>, kMaxCpuDevices> cpu;
  std::array<std::unique_ptr<DeviceContext>, kMaxCuda> cuda;
  std::vector<DeviceContext*> order;
  ~Registry() {
    if (forked_child.load(std::memory_order_relaxed)) {  // no worker to drain or join here: left as they are
      for (auto& slot : cpu) slot.release();
      for (auto& slot : cuda) slot.release();
      return;
    }
    // A pause left behind (an exception past a demo's guard) must not hang exit.
    for (DeviceContext* c : order)
      for (Queue* q : c->queues()) q->resume_all();
    // Drain every queue before destroying any context: an op on one queue may
    // wait for another queue's op (a cross-device copy, the data queue).
    for (DeviceContext* c : order)
      for (Queue* q : c->queues()) {
        try {
          q->wait_all();
        } catch (...) {  // an error nobody waited for: nothing left to report it to
        }
      }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      auto& slot = (*it)->device.is_cuda() ? cuda[(*it)->device.index] : cpu[(*it)->device.index];
      slot.reset();
    }
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

void drain_before_fork() {
  if (Queue::on_worker_thread()) return;  // a kernel that forks: its own queue cannot drain
  for (Queue* q : live_queues())
    if (!q->paused()) q->drain();  // an error met is kept for the parent's next blocker
}

void mark_forked_child() { forked_child.store(true, std::memory_order_relaxed); }

void watch_fork() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(drain_before_fork, nullptr, mark_forked_child); });
}

// A GPU's pool carves its blocks out of geometrically growing segments
// (segments.h) unless the environment has ASYNCMLP_SEGMENTS=0, which makes
// each block its own cudaMalloc. A CPU pool's blocks come from the host arena.
std::unique_ptr<RawAllocator> device_allocator(Device d, Backend* backend) {
  std::unique_ptr<RawAllocator> raw(new ForwardingAllocator(backend));
  if (d.is_cuda() && env_settings().segments) raw = std::make_unique<SegmentAllocator>(std::move(raw));
  return raw;
}

// The context whose ops this thread routes to its data queue (DataQueueGuard).
thread_local DeviceContext* routed_to_data = nullptr;

// The contexts this thread drives (check_frontend); it lets go of them as it
// ends, so another thread may take them over. A thread's thread_local objects
// are destroyed before any static one, the contexts included.
struct Driven {
  std::vector<DeviceContext*> contexts;
  ~Driven() {
    for (DeviceContext* c : contexts) c->frontend.store(std::thread::id(), std::memory_order_release);
  }
};
thread_local Driven driven;

}  // namespace

DeviceContext::DeviceContext(Device d, std::unique_ptr<Backend> b)
    : device(d),
      backend(std::move(b)),
      pool(d.str(), device_allocator(d, backend.get())),
      queue(d.str(), backend.get()) {
  detail::apply_settings(queue);
  queue_registry::serve_device(&queue);
  if (d.is_cuda()) {
    pool.set_limit(0, "none: the GPU's own memory");
  } else {  // docs/design.md §3: an allocation past the host's budget is an OutOfMemory, never a kill by the OS
    const MemoryBudget b = host_memory_budget();
    pool.set_limit(b.bytes, b.source);
  }
}

Queue& DeviceContext::data_queue() {
  if (Queue* q = data_queue_if_made()) return *q;
  if (device.is_cuda())
    throw DeviceError("the data queue is for CPU devices only: on " + device.str() +
                      " every kernel launches onto the device's one stream (use a CPU device)");
  std::lock_guard<std::mutex> lk(data_mu_);
  if (!data_queue_) {
    auto q = std::make_unique<Queue>(device.str() + " data", backend.get());
    detail::apply_settings(*q);
    queue_registry::serve_device(q.get());
    data_queue_ = std::move(q);
    data_.store(data_queue_.get(), std::memory_order_release);
  }
  return *data_queue_;
}

std::vector<Queue*> DeviceContext::queues() const {
  std::vector<Queue*> qs{const_cast<Queue*>(&queue)};
  if (Queue* q = data_queue_if_made()) qs.push_back(q);
  return qs;
}

DeviceContext& context(Device d) {
  detail::check_not_forked();
  Registry& r = registry();
  if (d.index < 0 || (!d.is_cuda() && d.index >= kMaxCpuDevices) || (d.is_cuda() && d.index >= kMaxCuda))
    throw DeviceError(detail::device_absent(d.str()));
  auto& slot = d.is_cuda() ? r.cuda[d.index] : r.cpu[d.index];
  std::lock_guard<std::mutex> lk(r.mu);
  if (!slot) {
    check_environment();  // no device runs under a setting the environment misspelt (util/env.h)
    watch_fork();
    slot = std::make_unique<DeviceContext>(d, make_backend(d));
    r.order.push_back(slot.get());
  }
  return *slot;
}

std::vector<DeviceContext*> live_contexts() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  return r.order;
}

std::vector<Queue*> live_queues() { return queue_registry::device_queues(); }

void detail::check_not_forked() {
  if (forked_child.load(std::memory_order_relaxed))
    throw Error("this process is a fork() of one that used asyncmlp, and a device's worker does not survive a "
                "fork: use the library in the parent, or start the child afresh (exec; Python's multiprocessing "
                "with the 'spawn' or 'forkserver' start method)");
}

void detail::check_frontend(DeviceContext& c) {
  check_not_forked();
  const std::thread::id me = std::this_thread::get_id();
  std::thread::id owner = c.frontend.load(std::memory_order_relaxed);
  if (owner == me) return;
  // Taking over from a thread that ended: acquire pairs with its release, so
  // what it left in the buffers' state is visible here.
  if (owner == std::thread::id() && c.frontend.compare_exchange_strong(owner, me, std::memory_order_acquire)) {
    driven.contexts.push_back(&c);
    return;
  }
  throw Error(concat(c.device.str(), " is driven by thread ", owner, ", not by this thread (", me,
                     "): the ops of a device are queued, and its tensors waited for, from one thread, the first "
                     "that uses it, until that thread ends (framework/asyncmlp.h)"));
}

Queue& current_queue(DeviceContext& c) { return routed_to_data == &c ? c.data_queue() : c.queue; }

DataQueueGuard::DataQueueGuard(Device d) : previous_(routed_to_data) {
  DeviceContext& c = context(d);
  c.data_queue();  // made now: a CUDA device throws here, not at the first op
  routed_to_data = &c;
}

DataQueueGuard::~DataQueueGuard() { routed_to_data = previous_; }

}  // namespace amlp
