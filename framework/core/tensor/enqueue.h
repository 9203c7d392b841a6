// enqueue.h — the one way an op reaches its device's queue.
//
// An op is described once (docs/design.md §1): the tensors it reads and
// writes, its scalars (sizes, flags, seeds, factors as scalar_bits(),
// addresses as pointer_bits()) and, rarely, a payload. Its kernel is a plain
// function of that description: it receives the buffers when it runs
// (OpArgs::in(i) / out(i), in declaration order) and reads everything else
// back from the scalars (OpArgs::scalar(i)) or the payload. A kernel cannot
// capture anything (OpKernel is a function pointer: a capturing lambda does
// not compile), so what it uses, what the engine tracks and what a step
// graph compares before replaying it (step_graph.h) cannot disagree.
// Declared buffers stay alive until the kernel ran. Ops on one queue run in
// order; across queues, a read waits for the buffer's last writer to
// complete, and a write waits for every other queue's last use of it.
//
//   Tensor y = detail::alloc(x.shape(), c);
//   enqueue(c, "copy", {&x}, {&y}, {bytes}, [](Backend& be, const OpArgs& k) {
//     be.copy(k.out(0), k.in(0), k.scalar(0));  // math: be.kernels.NAME(be, ...), core/backend/kernels.h
//   });
#pragma once
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <utility>
#include <vector>

#include "framework/core/queue/queue.h"
#include "framework/tensor.h"

namespace amlp {
struct DeviceContext;
struct Backend;
namespace detail {

// A kernel: a function of its op's description alone (captureless lambdas
// convert to it).
using OpKernel = BoundKernel::Fn;

// An op's name with what it needs beyond its device's stream (op_traits.h),
// declared by the op: a bare name is a plain device kernel, recordable.
//   enqueue(c, {"to_host", kWaitsForHost}, {&x}, {}, {pointer_bits(dst), bytes}, kernel);
struct OpName {
  OpName(const char* n) : name(n) {}  // NOLINT(google-explicit-constructor): a bare name is the common case
  OpName(const char* n, OpTraits t) : name(n), traits(t) {}
  const char* name;
  OpTraits traits;
};

// Pushes the op onto c's queue (current_queue(c): its data queue under a
// DataQueueGuard) and returns its sequence number on that queue. Undefined
// tensors (an optional bias) are passed to the kernel as nullptr. `scalars`
// are all the kernel's arguments besides its buffers (`{}` when it has
// none): a step graph replays the op as recorded while they and its buffers
// are unchanged (step_graph.h).
uint64_t enqueue(DeviceContext& c, OpName name, std::initializer_list<const Tensor*> reads,
                 std::initializer_list<const Tensor*> writes, OpScalars scalars, OpKernel k);
// The same for lists whose length is known only at run time (an op over every
// tensor of a list, like all_reduce_sum on CPU devices).
uint64_t enqueue(DeviceContext& c, OpName name, const std::vector<const Tensor*>& reads,
                 const std::vector<const Tensor*>& writes, OpScalars scalars, OpKernel k);
// The same with a payload (payload(v); the kernel reads k.payload<T>()): data
// that is not a handful of scalars (a host array, a message). The recogniser
// cannot compare it, so the op is never recorded: its steps run op by op.
uint64_t enqueue(DeviceContext& c, OpName name, std::initializer_list<const Tensor*> reads,
                 std::initializer_list<const Tensor*> writes, OpScalars scalars, OpPayload payload,
                 OpKernel k);

template <class T>
OpPayload payload(T value) {
  return OpPayload::of(std::move(value));
}
inline uint64_t pointer_bits(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }
inline uint64_t scalar_bits(float f) {  // OpArgs::scalar_float is its inverse
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

}  // namespace detail
}  // namespace amlp
