// runtime.cpp — the public runtime (runtime.h): blockers, settings and
// measurements over every device context.
#include "framework/runtime.h"

#include <sys/resource.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "framework/core/memory/address_space.h"
#include "framework/core/context.h"
#include "framework/util/env.h"
#include "framework/core/memory/host_memory.h"
#include "framework/core/memory/sanitizers.h"
#include "framework/core/settings.h"
#include "framework/error.h"

namespace amlp {

namespace {

struct Settings {
  std::atomic<bool> blocking{false};
  std::atomic<uint64_t> max_ops{0};
  std::atomic<size_t> max_bytes{0};
  std::atomic<bool> tf32{false};
  std::atomic<AllocPolicy> alloc{AllocPolicy::Enqueue};
  Settings() { blocking = env_settings().blocking; }
};

Settings& settings() {
  static Settings s;
  return s;
}

}  // namespace

namespace detail {

void apply_settings(Queue& q) {
  q.set_blocking(settings().blocking);
  q.set_max_pending(settings().max_ops, settings().max_bytes);
}


std::string device_absent(const std::string& name) {
  std::string why;
  if (name.rfind("cuda", 0) == 0) {
    const int n = cuda_device_count();
    if (!built_with_cuda()) why = "this build has no CUDA backend (configure with -DASYNCMLP_CUDA=ON)";
    else if (n == 0) why = "no CUDA GPU is visible (the CUDA runtime reports none, or no driver)";
    else why = concat(n, " CUDA GPU", n == 1 ? "" : "s", " visible: cuda:0 .. cuda:", n - 1);
  } else {
    why = concat("cpu:0 .. cpu:", kMaxCpuDevices - 1, " exist");
  }
  return concat("device '", name, "' is not there: ", why);
}

}  // namespace detail

void waitall() {
  detail::check_not_forked();
  const std::vector<Queue*> qs = live_queues();
  for (Queue* q : qs) q->drain();
  // One error per call, the first queue's; the others stay kept for the next
  // blocker (reporting one and dropping the rest would lose them).
  for (Queue* q : qs) q->rethrow_if_error();
}

void check_environment() {
  if (const std::string& why = env_settings().problem; !why.empty()) throw EnvError(why);
}

void set_blocking(bool on) {
  settings().blocking = on;
  for (Queue* q : live_queues()) q->set_blocking(on);
}
bool blocking() { return settings().blocking; }

void set_max_pending(uint64_t ops, size_t bytes) {
  settings().max_ops = ops;
  settings().max_bytes = bytes;
  for (Queue* q : live_queues()) q->set_max_pending(ops, bytes);
}

void set_alloc_policy(AllocPolicy p) { settings().alloc = p; }
AllocPolicy alloc_policy() { return settings().alloc; }
const char* to_string(AllocPolicy p) {
  switch (p) {
    case AllocPolicy::Run: return "run";
    case AllocPolicy::Stream: return "stream";
    case AllocPolicy::Enqueue: break;
  }
  return "enqueue";
}
bool alloc_policy_named(const std::string& name, AllocPolicy* p) {
  for (AllocPolicy q : {AllocPolicy::Enqueue, AllocPolicy::Run, AllocPolicy::Stream})
    if (name == to_string(q)) return *p = q, true;
  return false;
}

void set_memory_limit(Device d, size_t bytes, const std::string& source) { context(d).pool.set_limit(bytes, source); }
MemoryBudget memory_limit(Device d) { return context(d).pool.limit(); }

namespace {
std::mutex g_knob_mutex;
std::string g_knob = "set_memory_limit";
}  // namespace
void set_memory_limit_knob(const std::string& name) {
  std::lock_guard<std::mutex> l(g_knob_mutex);
  g_knob = name;
}
std::string memory_limit_knob() {
  std::lock_guard<std::mutex> l(g_knob_mutex);
  return g_knob;
}

namespace {
// A sanitizer build keeps shadow memory, outside the pool, beside the memory
// its code touches (AddressSanitizer one byte per 8, ThreadSanitizer two to
// three bytes per byte): its pool keeps the share that leaves room for it, so
// a run that outgrows the budget still fails with OutOfMemory, not a kill.
#if AMLP_TSAN
constexpr size_t kKeep = 1, kOf = 4;
constexpr const char* kShadowNote = ", a quarter of that (ThreadSanitizer's shadow memory takes the rest)";
#elif AMLP_ASAN
constexpr size_t kKeep = 4, kOf = 5;
constexpr const char* kShadowNote = ", four fifths of that (AddressSanitizer's shadow memory takes the rest)";
#else
constexpr size_t kKeep = 1, kOf = 1;
constexpr const char* kShadowNote = "";
#endif

MemoryBudget leave_room_for_shadow(MemoryBudget b) {
  if (kKeep == kOf || b.bytes == 0) return b;
  b.bytes = b.bytes / kOf * kKeep;
  b.source += kShadowNote;
  return b;
}
}  // namespace

MemoryBudget host_memory_budget() {
  static const MemoryBudget b =
      leave_room_for_shadow(detail::read_host_memory_budget("/proc", "/sys/fs/cgroup", detail::address_space_now()));
  return b;
}

uint64_t drop_pending() {
  uint64_t n = 0;
  for (Queue* q : live_queues()) n += q->drop_pending();
  return n;
}
void empty_cache(Device d) { context(d).pool.empty_cache(); }

void set_tf32(bool on) {
  settings().tf32 = on;  // read by the CUDA GEMMs as each is launched (cuda/linalg.cpp)
}
bool tf32() { return settings().tf32; }

MemoryStats memory_stats(Device d) { return context(d).pool.stats(); }
size_t pool_block_bytes(size_t bytes) { return Pool::round(bytes == 0 ? 1 : bytes); }
struct DeviceTimer::State {
  DeviceContext* ctx = nullptr;
  Queue* queue = nullptr;
  uint64_t seq = 0;
  TimerPoint point;  // written by the op (the worker), read after waiting for it
  ~State() { ctx->backend->timer_release(point); }
};

DeviceTimer DeviceTimer::mark(Device d) {
  DeviceContext& c = context(d);
  auto st = std::make_shared<State>();
  st->ctx = &c;
  st->queue = &current_queue(c);
  Backend* be = c.backend.get();
  TimerPoint* p = &st->point;
  // The op keeps the state alive until it ran: a timer dropped at once still
  // records into memory it owns.
  st->seq = st->queue->push("timer", [be, p, keep = st] { be->timer_record(*p); }, {}, {},
                            OpTraits{/*waits_for_host=*/false, /*collective=*/false, /*recordable=*/false});
  DeviceTimer t;
  t.state_ = std::move(st);
  return t;
}

bool DeviceTimer::reached() const { return state_ && state_->queue->complete(state_->seq); }

double DeviceTimer::seconds_since(const DeviceTimer& earlier) const {
  if (!state_ || !earlier.state_) throw Error("DeviceTimer: reading a timer that was never marked");
  const State& a = *earlier.state_;
  const State& b = *state_;
  if (a.ctx != b.ctx || a.queue != b.queue)
    throw Error(detail::concat("DeviceTimer: points on ", a.queue->name(), " and ", b.queue->name(),
                               " are on two timelines and cannot be compared"));
  a.queue->drain(a.seq);  // a device fault met is kept for the next blocker
  b.queue->drain(b.seq);
  if (!a.point.recorded || !b.point.recorded)
    throw Error(detail::concat("DeviceTimer: ", b.queue->name(),
                               " never reached a timer's op (it was dropped, or failed)"));
  return b.ctx->backend->timer_seconds(a.point, b.point);
}

void set_kernel_clock(bool on) { Queue::set_kernel_clock(on); }
bool kernel_clock() { return Queue::kernel_clock(); }

QueueStats queue_stats(Device d) { return context(d).queue.stats(); }
void set_step_graph(Device d, int warmup) {
  DeviceContext& c = context(d);
  c.queue.set_step_graph(warmup);
  if (warmup <= 0) c.pool.drop_step_memory();
}
void begin_step(Device d) { context(d).queue.begin_step(); }
void end_step(Device d) { context(d).queue.end_step(); }
void begin_step_memory(Device d) { context(d).pool.begin_step_memory(); }
void end_step_memory(Device d) { context(d).pool.end_step_memory(); }
StepGraphStats step_graph_stats(Device d) {
  DeviceContext& c = context(d);
  StepGraphStats s = c.queue.step_graph_stats();
  s.slot_bytes = c.pool.step_memory_bytes();
  return s;
}
QueueStats data_queue_stats(Device d) {
  const Queue* q = context(d).data_queue_if_made();
  return q ? q->stats() : QueueStats{};
}
void reset_peaks(Device d) {
  DeviceContext& c = context(d);
  c.pool.reset_peak();
  for (Queue* q : c.queues()) q->reset_peak();
}

QueuePause::QueuePause(Device d) : device_(d) { context(d).queue.pause(); }
QueuePause::~QueuePause() { context(device_).queue.resume(); }

uint64_t process_minor_faults() {
  struct rusage u {};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return static_cast<uint64_t>(u.ru_minflt);
}

}  // namespace amlp
