// enqueue.h — internal: how an op reaches its device's queue.
//
// Reads and writes keep their buffers alive until the kernel ran. Ops on one
// queue run in order; across queues, a read waits for the buffer's last
// writer, and a write waits for every other queue's last use of it.
#pragma once
#include <cstdint>
#include <initializer_list>

#include "framework/queue.h"
#include "framework/tensor.h"

namespace amlp {
struct DeviceContext;
namespace detail {

// Pushes `k` onto c's queue and returns its sequence number.
uint64_t enqueue(DeviceContext& c, const char* name, std::initializer_list<const Tensor*> reads,
                 std::initializer_list<const Tensor*> writes, Queue::Kernel k);

}  // namespace detail
}  // namespace amlp
