// enqueue.h — the one way an op reaches its device's queue.
//
// An op declares the tensors it reads and writes, once; the kernel receives
// their buffers when it runs (OpArgs::in(i) / out(i), in declaration order),
// so what it touches and what the engine tracks cannot disagree. Declared
// buffers stay alive until the kernel ran. Ops on one queue run in order;
// across queues, a read waits for the buffer's last writer to complete, and
// a write waits for every other queue's last use of it.
//
//   Tensor y = detail::alloc(x.shape(), c);
//   enqueue(c, "relu", {&x}, {&y}, [n](Backend& be, const OpArgs& a) {
//     be.relu(a.in(0), a.out(0), n);
//   });
#pragma once
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <vector>

#include "framework/core/queue.h"
#include "framework/tensor.h"

namespace amlp {
struct DeviceContext;
struct Backend;
namespace detail {

using OpKernel = std::function<void(Backend&, const OpArgs&)>;

// An op's name with what it needs beyond its device's stream (op_traits.h),
// declared by the op: a bare name is a plain device kernel, recordable.
//   enqueue(c, {"to_host", kWaitsForHost}, {&x}, {}, kernel);
struct OpName {
  OpName(const char* n) : name(n) {}  // NOLINT(google-explicit-constructor): a bare name is the common case
  OpName(const char* n, OpTraits t) : name(n), traits(t) {}
  const char* name;
  OpTraits traits;
};

// Pushes the op onto c's queue (current_queue(c): its data queue under a
// DataQueueGuard) and returns its sequence number on that queue. Undefined
// tensors (an optional bias) are passed to the kernel as nullptr.
uint64_t enqueue(DeviceContext& c, OpName name, std::initializer_list<const Tensor*> reads,
                 std::initializer_list<const Tensor*> writes, OpKernel k);
// The same for lists whose length is known only at run time (an op over every
// tensor of a list, like all_reduce_sum on CPU devices).
uint64_t enqueue(DeviceContext& c, OpName name, const std::vector<const Tensor*>& reads,
                 const std::vector<const Tensor*>& writes, OpKernel k);

// The same, for an op whose kernel's closure holds nothing but `scalars`
// (its sizes, flags, seeds and factors; a float as scalar_bits()): a step
// graph replays it as recorded while they and its buffers are unchanged
// (core/step_graph.h); an op that declares none is recorded again every step.
uint64_t enqueue(DeviceContext& c, OpName name, std::initializer_list<const Tensor*> reads,
                 std::initializer_list<const Tensor*> writes, std::vector<uint64_t> scalars, OpKernel k);
uint64_t enqueue(DeviceContext& c, OpName name, const std::vector<const Tensor*>& reads,
                 const std::vector<const Tensor*>& writes, std::vector<uint64_t> scalars, OpKernel k);
inline uint64_t pointer_bits(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }
inline uint64_t scalar_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

}  // namespace detail
}  // namespace amlp
