// queue_registry.h — every live queue, in the order they were made: the one
// list the engine walks. A blocker that reports an error makes every queue
// that kept it forget it (queue_errors.cpp); a blocker inside a step
// releases every queue's held ops; the runtime's settings and waitall()
// reach the queues that serve a device (context.h live_queues()). A queue
// made on its own (tests, demos) is listed for the first two only.
//
//   Queue's constructor / destructor:   queue_registry::add(this) / remove(this)
//   DeviceContext, as it makes a queue: queue_registry::serve_device(q)
//   any thread:                         queue_registry::for_each([](Queue& q) { ... });
#pragma once
#include <functional>
#include <vector>

namespace amlp {

class Queue;

namespace queue_registry {

void add(Queue* q);
void remove(Queue* q);
void serve_device(Queue* q);
// f(q) for every live queue, under the registry's lock (no queue is
// destroyed meanwhile; f must not make or destroy one).
void for_each(const std::function<void(Queue&)>& f);
// The queues that serve a device, in the order they were made. They live
// until exit.
std::vector<Queue*> device_queues();

}  // namespace queue_registry
}  // namespace amlp
