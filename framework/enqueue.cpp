// enqueue.cpp — how every op reaches its queue, with its cross-queue dependencies.
#include "framework/enqueue.h"

#include "framework/runtime.h"

namespace amlp::detail {

// Records that op `seq` of queue `q` used `s`.
static void note_use(Storage& s, Queue* q, uint64_t seq) {
  if (!s.first_use.queue || s.first_use.queue == q) {
    s.first_use = {q, seq};
    return;
  }
  for (Storage::Use& u : s.more_uses)
    if (u.queue == q) {
      u.seq = seq;
      return;
    }
  s.more_uses.push_back({q, seq});
}

static void add_dep(std::vector<QueueDep>& deps, void* queue, uint64_t seq, const Queue* self) {
  Queue* q = static_cast<Queue*>(queue);
  if (q && q != self && !q->done(seq)) deps.push_back({q, seq});
}

// Queues `k` on `c`: reads and writes keep their buffers alive until it ran.
// Ops on one queue run in order; across queues, a read waits for the buffer's
// last writer, and a write waits for every other queue's last use of it.
uint64_t enqueue(DeviceContext& c, const char* name, std::initializer_list<const Tensor*> reads,
             std::initializer_list<const Tensor*> writes, Queue::Kernel k) {
  Queue* self = &c.queue;
  std::vector<std::shared_ptr<Storage>> refs;
  refs.reserve(reads.size() + writes.size());
  std::vector<QueueDep> deps;
  for (const Tensor* t : reads) {
    if (!t->defined()) continue;
    const auto& s = t->storage();
    refs.push_back(s);
    add_dep(deps, s->writer_queue, s->writer_seq, self);
  }
  for (const Tensor* t : writes) {
    if (!t->defined()) continue;
    const auto& s = t->storage();
    refs.push_back(s);
    add_dep(deps, s->first_use.queue, s->first_use.seq, self);
    for (const Storage::Use& u : s->more_uses) add_dep(deps, u.queue, u.seq, self);
  }
  uint64_t seq = self->push(name, std::move(k), std::move(refs), std::move(deps));
  for (const Tensor* t : reads)
    if (t->defined()) note_use(*t->storage(), self, seq);
  for (const Tensor* t : writes) {
    if (!t->defined()) continue;
    Storage& s = *t->storage();
    note_use(s, self, seq);
    s.writer_queue = self;
    s.writer_seq = seq;
  }
  return seq;
}

}  // namespace amlp::detail
