// tensor.cpp — Tensor handles, their blockers, and HostCopy (tensor.h).
#include "framework/tensor.h"

#include <cstring>
#include <iomanip>
#include <limits>
#include <ostream>
#include <sstream>

#include "framework/core/context.h"
#include "framework/core/queue/backlog.h"
#include "framework/core/tensor/enqueue.h"
#include "framework/core/tensor/tensor_impl.h"
#include "framework/error.h"
#include "framework/runtime.h"

namespace amlp {

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  if (s.size() == 1) os << ",";
  os << ")";
  return os.str();
}

// The largest element count a tensor may have: its byte count must fit in a
// signed 64-bit offset (ptrdiff_t), so numel() * sizeof(float) never wraps.
static constexpr int64_t kMaxNumel = std::numeric_limits<int64_t>::max() / static_cast<int64_t>(sizeof(float));

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) throw ShapeError("shape " + shape_str(s) + " has a negative dimension");
    if (d != 0 && n > kMaxNumel / d) {
      // Overflow only matters when no later dimension is 0 (then the count is 0).
      bool zero = false;
      for (int64_t e : s) zero = zero || e == 0;
      if (zero) return 0;
      throw ShapeError(detail::concat("shape ", shape_str(s), " has more elements than a tensor can hold (at most ",
                                      kMaxNumel, ", so that its byte count fits in 64 bits)"));
    }
    n *= d;
  }
  return n;
}

static const TensorImpl& checked(const std::shared_ptr<TensorImpl>& p) {
  if (!p) throw Error("use of an undefined tensor");
  return *p;
}

TensorImpl::~TensorImpl() {
  if (storage && storage->offered_when_dropped()) storage->pool().offer(storage);
}

namespace detail {

namespace {
// Stream-ordered reuse: an offered buffer's block may go to an op on `q`
// once every queued use of it on another queue has completed; those on `q`
// itself run before the op, in order (on CUDA, on the same stream).
bool runs_after_its_uses(const Storage& old, const void* q) {
  bool after = true;
  old.for_each_use([&](const OpRef& u) { after = after && (u.queue == q || u.queue->complete(u.seq)); });
  return after;
}

std::shared_ptr<Storage> allocate(DeviceContext& c, size_t bytes, bool now) {
  switch (alloc_policy()) {
    case AllocPolicy::Run:
      if (!now) return c.pool.allocate_later(bytes);
      return c.pool.allocate(bytes);
    case AllocPolicy::Stream: {
      if (now) return c.pool.allocate(bytes, /*offered_when_dropped=*/true);  // the frontend may write it at once
      std::shared_ptr<Storage> old;
      auto s = c.pool.allocate_reusing(bytes, &runs_after_its_uses, &current_queue(c), old);
      if (old) forget_backlog(*old);  // the block counts once, in the new buffer's backlog
      return s;
    }
    case AllocPolicy::Enqueue:
      break;
  }
  return c.pool.allocate(bytes);
}
}  // namespace

DeviceContext& ctx_of(const Tensor& t) { return *checked(t.impl_ptr()).ctx; }
const std::shared_ptr<Storage>& storage_of(const Tensor& t) { return checked(t.impl_ptr()).storage; }

void check_shape(const char* op, const Shape& s) {
  try {
    (void)numel(s);  // negative dimensions, element and byte counts that do not fit
  } catch (const ShapeError& e) {
    throw ShapeError(concat(op, ": ", e.what()));
  }
}

Tensor alloc(const Shape& s, DeviceContext& c, bool now) {
  // Checked before anything is allocated: a count that wrapped would allocate
  // a small block that the kernel then writes past.
  const int64_t n = numel(s);
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = s;
  impl->ctx = &c;
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  impl->storage = allocate(c, bytes, now);
  return Tensor(std::move(impl));
}

Tensor alias(const Tensor& t) {
  const TensorImpl& src = checked(t.impl_ptr());
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = src.shape;
  impl->ctx = src.ctx;
  impl->storage = src.storage;
  return Tensor(std::move(impl));
}

}  // namespace detail

const Shape& Tensor::shape() const { return checked(impl_).shape; }
int64_t Tensor::dim(int i) const {
  const Shape& s = shape();
  int n = static_cast<int>(s.size());
  if (i < 0) i += n;
  if (i < 0 || i >= n) throw ShapeError(detail::concat("dimension ", i, " out of range for shape ", shape_str(s)));
  return s[i];
}
int64_t Tensor::numel() const { return amlp::numel(shape()); }
Device Tensor::device() const { return checked(impl_).ctx->device; }

// After waiting for a buffer's writer: its failure, if it failed (or never
// ran because its own input had failed), is this blocker's error.
static void rethrow_upstream(const Storage& s, Queue& q) {
  if (s.failed()) Queue::report(s.error());  // every queue that kept it forgets it
  q.rethrow_if_error();
}

void Tensor::wait_to_read() const {
  detail::check_frontend(detail::ctx_of(*this));  // the buffer's writer is the frontend's state
  const Storage& s = *detail::storage_of(*this);
  const OpRef w = s.last_writer();
  Queue& q = w.queue ? *w.queue : detail::ctx_of(*this).queue;
  if (w.queue) q.drain(w.seq);  // a device fault met is kept, and reported below
  rethrow_upstream(s, q);
}

std::vector<float> Tensor::to_host() const {
  // The op and this call share the values: a wait that ends early (a blocker
  // poll's WaitInterrupted) leaves the queued copy its own destination.
  using Values = std::shared_ptr<std::vector<float>>;
  const Values out = std::make_shared<std::vector<float>>(static_cast<size_t>(numel()));
  DeviceContext& c = detail::ctx_of(*this);
  Queue& q = current_queue(c);  // where enqueue puts it
  // Queued like any op (so it follows the writer), then waited for.
  const uint64_t seq = detail::enqueue(c, {"to_host", kWaitsForHost}, {this}, {}, {nbytes()}, detail::payload(out),
                                       [](Backend& be, const OpArgs& a) {
    be.copy_to_host(a.payload<Values>()->data(), a.in(0), a.scalar(0));
  });
  q.drain(seq);
  rethrow_upstream(*detail::storage_of(*this), q);
  return std::move(*out);
}

float Tensor::item() const {
  if (numel() != 1) throw ShapeError("item() needs a one-element tensor, got shape " + shape_str(shape()));
  return to_host()[0];
}

// --- HostCopy ------------------------------------------------------------------------

struct HostCopy::State {
  DeviceContext* ctx = nullptr;
  Queue* queue = nullptr;  // the queue the copy went to
  uint64_t seq = 0;
  // A zero-element buffer the copy op declares as its output: the worker
  // leaves in its error slot the copy's own outcome (the source's failure
  // when the copy did not run), which later ops writing the source, running
  // while get() reads it, never touch.
  Tensor outcome;
  void* staging = nullptr;       // host memory the device writes (pinned on CUDA)
  size_t bytes = 0;
  std::vector<float> values;
  bool done = false;
  ~State() {
    if (!staging) return;
    try {
      queue->drain(seq);  // the device may still be writing into it; a fault met is kept
    } catch (...) {
    }
    ctx->backend->free_host(staging);
  }
};

HostCopy::HostCopy() = default;
HostCopy::HostCopy(HostCopy&&) noexcept = default;
HostCopy& HostCopy::operator=(HostCopy&&) noexcept = default;
HostCopy::~HostCopy() = default;

HostCopy Tensor::to_host_async() const {
  DeviceContext& c = detail::ctx_of(*this);
  HostCopy h;
  h.state_ = std::make_unique<HostCopy::State>();
  HostCopy::State& st = *h.state_;
  st.ctx = &c;
  st.queue = &current_queue(c);
  st.outcome = detail::alloc({0}, c, /*now=*/true);
  st.bytes = nbytes();
  st.staging = c.backend->alloc_host(st.bytes);
  // The staging memory outlives the op (State's destructor waits for it).
  st.seq = detail::enqueue(c, {"to_host_async", kWaitsForHost}, {this}, {&st.outcome},
                           {detail::pointer_bits(st.staging), st.bytes}, [](Backend& be, const OpArgs& a) {
    be.copy_to_host_async(a.scalar_ptr<void>(0), a.in(0), a.scalar(1));
  });
  return h;
}

bool HostCopy::ready() const { return state_ && state_->queue->complete(state_->seq); }

const std::vector<float>& HostCopy::get() {
  if (!state_) throw Error("HostCopy::get() on an empty HostCopy");
  State& st = *state_;
  if (!st.done) {
    st.queue->drain(st.seq);
    rethrow_upstream(*detail::storage_of(st.outcome), *st.queue);
    st.values.resize(st.bytes / sizeof(float));
    if (st.bytes) std::memcpy(st.values.data(), st.staging, st.bytes);
    st.done = true;
  }
  return st.values;
}

// --- autograd state ----------------------------------------------------------------------

Tensor& Tensor::requires_grad_(bool on) {
  checked(impl_);
  impl_->requires_grad = on;
  return *this;
}
bool Tensor::requires_grad() const { return checked(impl_).requires_grad; }
Tensor Tensor::grad() const { return Tensor(checked(impl_).grad); }
void Tensor::reset_grad() const {
  checked(impl_);
  impl_->grad.reset();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "Tensor(undefined)";
  std::vector<float> v = t.to_host();
  os << "Tensor" << shape_str(t.shape()) << " on " << t.device().str() << " [";
  const size_t show = 8;
  for (size_t i = 0; i < v.size() && i < show; ++i) os << (i ? ", " : "") << v[i];
  if (v.size() > show) os << ", ... (" << v.size() << " values)";
  return os << "]";
}

}  // namespace amlp
