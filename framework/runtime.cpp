#include "framework/runtime.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "framework/error.h"

namespace amlp {

namespace {

struct Settings {
  std::atomic<bool> blocking{false};
  std::atomic<uint64_t> max_ops{0};
  std::atomic<size_t> max_bytes{0};
  std::atomic<bool> tf32{false};
  Settings() {
    const char* b = std::getenv("ASYNCMLP_BLOCKING");
    blocking = b && std::strcmp(b, "0") != 0 && *b;
  }
};

Settings& settings() {
  static Settings s;
  return s;
}

constexpr int kMaxCuda = 16;

// Contexts live until exit; all queues are drained, then the contexts are
// destroyed in reverse order of creation.
struct Registry {
  std::mutex mu;
  std::array<std::unique_ptr<DeviceContext>, kMaxCpuDevices> cpu;
  std::array<std::unique_ptr<DeviceContext>, kMaxCuda> cuda;
  std::vector<DeviceContext*> order;
  ~Registry() {
    // Drain every queue before destroying any context: an op on one queue may
    // wait for another queue's op (a cross-device copy).
    for (DeviceContext* c : order) {
      try {
        c->queue.wait_all();
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

}  // namespace

DeviceContext::DeviceContext(Device d, std::unique_ptr<Backend> b)
    : device(d),
      backend(std::move(b)),
      pool(d.str(), std::unique_ptr<RawAllocator>(new ForwardingAllocator(backend.get()))),
      queue(d.str(), backend.get()) {
  queue.set_blocking(settings().blocking);
  queue.set_max_pending(settings().max_ops, settings().max_bytes);
}

DeviceContext::~DeviceContext() {
  // queue (declared last) is destroyed first: it drains and joins; then the
  // pool, then the backend.
}

DeviceContext& context(Device d) {
  Registry& r = registry();
  if (d.index < 0) throw DeviceError("device '" + d.str() + "' is not there");
  if (!d.is_cuda() && d.index >= kMaxCpuDevices)
    throw DeviceError(detail::concat("device '", d.str(), "' is not there (cpu:0 .. cpu:", kMaxCpuDevices - 1, " exist)"));
  if (d.is_cuda() && (d.index >= kMaxCuda || d.index >= cuda_device_count()))
    throw DeviceError(detail::concat("device '", d.str(), "' is not there (", cuda_device_count(), " CUDA GPU(s) visible)"));
  auto& slot = d.is_cuda() ? r.cuda[d.index] : r.cpu[d.index];
  std::lock_guard<std::mutex> lk(r.mu);
  if (!slot) {
    slot = std::make_unique<DeviceContext>(d, d.is_cuda() ? make_cuda_backend(d.index) : make_cpu_backend(d.index));
    r.order.push_back(slot.get());
  }
  return *slot;
}

std::vector<DeviceContext*> live_contexts() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  return r.order;
}

void waitall() {
  std::exception_ptr first;
  for (DeviceContext* c : live_contexts()) {
    try {
      c->queue.wait_all();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

void set_blocking(bool on) {
  settings().blocking = on;
  for (DeviceContext* c : live_contexts()) c->queue.set_blocking(on);
}
bool blocking() { return settings().blocking; }

void set_max_pending(uint64_t ops, size_t bytes) {
  settings().max_ops = ops;
  settings().max_bytes = bytes;
  for (DeviceContext* c : live_contexts()) c->queue.set_max_pending(ops, bytes);
}

MemoryStats memory_stats(Device d) { return context(d).pool.stats(); }
QueueStats queue_stats(Device d) { return context(d).queue.stats(); }
void reset_peaks(Device d) {
  DeviceContext& c = context(d);
  c.pool.reset_peak();
  c.queue.reset_peak();
}

void set_tf32(bool on) { settings().tf32 = on; }
bool tf32() { return settings().tf32; }

}  // namespace amlp
