// host_work.h — per-batch work the frontend does before it queues a batch,
// standing for an input pipeline (--host-work, --host-work-kind), and the
// throughput model that says what asynchrony buys against it.
//
//   HostWork w{2000000, HostWorkKind::Wait};   // 2 ms a batch, sleeping
//   do_host_work(w);                           // on the frontend, before the batch's ops
//   predicted_wall_s(100, SyncMode{...}, h, d) // N·max(h, d) + (N/K)·min(h, d)
//
// The throughput model. With h the frontend's time per batch (host work and
// queueing, its blocking waits excluded) and d the device's (the queue's busy
// time), a loop that waits for the device every K batches runs groups of K
// batches: the device starts a group once its first batch is queued and the
// frontend goes on queueing meanwhile, so a group takes K·max(h, d) +
// min(h, d), and the run
//     wall ≈ N·max(h, d) + ceil(N/K)·min(h, d)
// synchronized (K = 1): N·(h + d); unsynchronized (K = N): N·max(h, d) +
// min(h, d); bounded by back-pressure of at least one batch: as
// unsynchronized (the frontend is held back, never the device starved).
// With h > d the device finishes each batch before the next is queued, so the
// backlog stays near one batch in every mode: there is nothing to run ahead.
#pragma once
#include <cstdint>
#include <string>

#include "train/sync_policy.h"

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

// "wait" | "compute"; throws amlp::ParseError naming both.
HostWorkKind parse_host_work_kind(const std::string& text);
std::string to_string(HostWorkKind k);  // "wait", "compute"

// DURATION ("2ms", "250us", "0"; framework/parse.h) or "match".
HostWork parse_host_work(const std::string& text);

// Does `w` on the calling thread: sleeps until, or spins on the core until,
// w.ns have passed since the call. Returns at once for 0.
void do_host_work(const HostWork& w);

// The model above for `batches` batches of h and d seconds each, synchronized
// every `every` batches (1: every batch; batches or more: never).
double predicted_wall_s(int batches, int every, double host_s, double device_s);

// The `every` the model uses for a mode: K for every=K, 1 for batch, the run's
// length for none and for a bounded run whose bound holds at least one batch
// (a bound under one batch makes the frontend wait for each: 1).
int model_every(const SyncMode& m, int batches, size_t max_pending_bytes, size_t bytes_per_batch);

}  // namespace amlp::train
