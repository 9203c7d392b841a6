// host_work.h — per-batch work the frontend does before it queues a batch,
// standing for an input pipeline (--host-work, --host-work-kind). What
// asynchrony buys against it is the throughput model (train/predict/predict.h): with
// h > d the device finishes each batch before the next is queued, so the
// backlog stays near one batch in every mode: there is nothing to run ahead.
//
//   HostWork w{2000000, HostWorkKind::Wait};   // 2 ms a batch, sleeping
//   do_host_work(w);                           // on the frontend, before the batch's ops
//   do_host_work(w, &interrupt_flag());        // ... cut short once a signal came (train/runs/interrupt.h)
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

#include "train/options/sync_policy.h"

namespace amlp::train {

enum class HostWorkKind {
  Wait,     // sleeps: reading files, waiting on I/O or the network (the cores stay free)
  Compute,  // spins on a core: decoding, augmenting (competes with a CPU device's threads)
};

struct HostWork {
  int64_t ns = 0;  // per batch; 0 = none
  HostWorkKind kind = HostWorkKind::Wait;
  bool match_device = false;  // --host-work match: ns is set to the device's measured time per batch
};

constexpr int64_t kMaxHostWorkNs = int64_t(60) * 1000000000;  // a minute per batch

std::string to_string(HostWorkKind k);  // "wait", "compute"

// How soon a wait notices `stop`: it sleeps in slices this long (a signal
// handler can only set a flag, and the signal may go to any thread, so the
// sleep cannot count on being woken). A spin looks at it every ~1 µs.
constexpr int64_t kHostWorkStopPollNs = 10000000;  // 10 ms

// Does `w` on the calling thread: sleeps until, or spins on the core until,
// w.ns have passed since the call. Returns at once for 0. When `stop` is
// given and becomes non-zero (a signal handler's flag), it returns within
// about kHostWorkStopPollNs: false then, true when the work ran its length.
bool do_host_work(const HostWork& w, const std::atomic<int>* stop = nullptr);

}  // namespace amlp::train
