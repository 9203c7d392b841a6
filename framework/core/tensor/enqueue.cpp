// enqueue.cpp — how every op reaches its queue, with its cross-queue dependencies.
#include "framework/core/tensor/enqueue.h"

#include <utility>

#include "framework/core/context.h"
#include "framework/core/tensor/tensor_impl.h"
#include "framework/error.h"

namespace amlp::detail {

namespace {

// A dependency on another queue's op counts until that op has *completed*
// (on CUDA: its event has passed), not merely been launched.
void add_dep(std::vector<QueueDep>& deps, Queue* q, uint64_t seq, const Queue* self) {
  if (q && q != self && !q->complete(seq)) deps.push_back({q, seq});
}

// Every overload of enqueue(): the declared tensors as arrays, so neither
// list is copied before its buffers are.
uint64_t enqueue_arrays(DeviceContext& c, const OpName& name, const Tensor* const* reads, size_t n_reads,
                        const Tensor* const* writes, size_t n_writes, OpKernel k, OpScalars&& scalars,
                        OpPayload&& payload = {}) {
  if (!k) throw Error(concat("op '", name.name, "' was enqueued without a kernel"));
  check_frontend(c);  // the buffers' writers and uses below are this thread's (framework/asyncmlp.h)
  Queue* self = &current_queue(c);  // the device's queue, or its data queue (DataQueueGuard)
  OpBuffers bufs;
  bufs.refs.reserve(n_reads + n_writes);
  bufs.reads = n_reads;
  bufs.traits = name.traits;
  bufs.scalars_declared = true;  // the kernel has nothing else (OpKernel)
  bufs.scalars = std::move(scalars);
  bufs.payload = std::move(payload);
  std::vector<QueueDep> deps;
  for (size_t i = 0; i < n_reads; ++i) {
    const Tensor* t = reads[i];
    if (t->defined()) check_frontend(ctx_of(*t));
    bufs.refs.push_back(t->defined() ? storage_of(*t) : nullptr);
    if (const auto& s = bufs.refs.back()) add_dep(deps, s->last_writer().queue, s->last_writer().seq, self);
  }
  for (size_t i = 0; i < n_writes; ++i) {
    const Tensor* t = writes[i];
    if (t->defined()) check_frontend(ctx_of(*t));
    bufs.refs.push_back(t->defined() ? storage_of(*t) : nullptr);
    if (const auto& s = bufs.refs.back()) s->for_each_use([&](const OpRef& u) { add_dep(deps, u.queue, u.seq, self); });
  }
  Backend* be = c.backend.get();
  // Bookkeeping reads the refs after the push moved them: keep raw pointers
  // (on the stack for the usual few; no allocation per op).
  constexpr size_t kOnStack = 16;
  Storage* on_stack[kOnStack];
  std::vector<Storage*> on_heap;
  Storage** used = on_stack;
  if (bufs.refs.size() > kOnStack) on_heap.resize(bufs.refs.size()), used = on_heap.data();
  for (size_t i = 0; i < bufs.refs.size(); ++i) used[i] = bufs.refs[i].get();
  const size_t n_used = bufs.refs.size();
  const uint64_t seq = self->push(
      name.name, Queue::Kernel(k, be), std::move(bufs), std::move(deps));
  for (size_t i = 0; i < n_used; ++i) {
    Storage* s = used[i];
    if (!s) continue;
    if (i < n_reads) s->read_queued(self, seq);
    else s->write_queued(self, seq);
  }
  return seq;
}

}  // namespace

uint64_t enqueue(DeviceContext& c, OpName name, std::initializer_list<const Tensor*> reads,
                 std::initializer_list<const Tensor*> writes, OpScalars scalars, OpKernel k) {
  return enqueue_arrays(c, name, reads.begin(), reads.size(), writes.begin(), writes.size(), k, std::move(scalars));
}

uint64_t enqueue(DeviceContext& c, OpName name, const std::vector<const Tensor*>& reads,
                 const std::vector<const Tensor*>& writes, OpScalars scalars, OpKernel k) {
  return enqueue_arrays(c, name, reads.data(), reads.size(), writes.data(), writes.size(), k, std::move(scalars));
}

uint64_t enqueue(DeviceContext& c, OpName name, std::initializer_list<const Tensor*> reads,
                 std::initializer_list<const Tensor*> writes, OpScalars scalars, OpPayload payload,
                 OpKernel k) {
  return enqueue_arrays(c, name, reads.begin(), reads.size(), writes.begin(), writes.size(), k, std::move(scalars),
                        std::move(payload));
}

}  // namespace amlp::detail
