// predict.h — the two models train_mlp checks its runs against: the memory a
// run holds and the wall time it takes. The summary's 'predicted' lines and
// --help's model text both come from here.
//
//   r.predicted_increase_bytes = predicted_increase(r);   // from the run's measurements
//   r.predicted.wall_s = predicted_wall_s({N, K, h, d, fresh_bytes, fresh_s_per_byte()});
//
// Memory, allocation policy `enqueue` (the default):
//   bytes_per_batch  = what the frontend allocates for one batch (data, forward,
//                      loss, backward, step, the loss read): the change in
//                      MemoryStats::bytes_allocated_total across the batch
//                      (under run, where the worker allocates, the run's
//                      allocations over its batches);
//   backlog          = batches alive: those whose last op has not completed,
//                      plus the one being queued. It only rises when a batch
//                      starts, so its peak is sampled there;
//   predicted        = peak backlog × bytes_per_batch, and with back-pressure
//                      of B bytes at most B + one op's largest output.
// Every queued op holds its outputs until it has run, and the loop releases
// the gradients after each step (set-to-none), so a finished batch holds
// nothing: the prediction is an upper bound, exact when the backlog is all
// unstarted work.
// Allocation policy `run` (outputs allocated as the worker starts their op):
//   working_set      = the device queue's peak backlog bytes less the bytes in
//                      use at the start (the parameters);
//   peak_data_ahead  = the data queue's peak backlog bytes (the data generated
//                      and still needed by training ops);
//   predicted        = working_set + peak_data_ahead.
//
// Time: h the frontend's seconds per batch (host work and queueing, its waits
// excluded), d the device's (the queue's busy time). A loop that waits for
// the device every K of N batches runs groups of K batches: the device starts
// a group once its first batch is queued and the frontend goes on queueing
// meanwhile, so a group takes K·max(h, d) + min(h, d), and the run
//   wall = N·max(h, d) + ceil(N/K)·min(h, d) + fresh
// synchronized (K = 1): N·(h + d); unsynchronized (K = N): N·max(h, d) +
// min(h, d); bounded by back-pressure of at least one batch: as
// unsynchronized (the frontend is held back, never the device starved);
// where fresh = the seconds the device's worker spent making fresh blocks
// resident (MemoryStats::fresh, counted where it pays them;
// without those counters, the bytes the CPU pools had to obtain from the
// system during the run × fresh_s_per_byte(), a probe). The device's
// worker makes a fresh block resident before its op writes it (what the
// populator has not done), inside the queue's busy time: so d here is the device's time on resident memory, the
// measured d less fresh / N, and the fresh memory is a term of its own that
// no overlap hides (the backlog's pages are backed one after the other).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "framework/process_group.h"
#include "train/plan/run_result.h"
#include "train/options/sync_policy.h"

namespace amlp::train {

// --- memory ---------------------------------------------------------------------
// For one device of a run (`i`) and for the run (their sum).
// --graph on: what the graph slots hold for batches of `bytes_per_batch`.
size_t graph_slots_bytes(size_t bytes_per_batch);
size_t predicted_increase(const RunResult& r, size_t i);
// The enqueue model's arithmetic: backlog x bytes per batch, and with
// back-pressure of B bytes at most B + one op's largest output.
size_t backlog_increase(int backlog_batches, size_t bytes_per_batch, size_t max_pending_bytes, size_t largest_tensor_bytes);
size_t predicted_increase(const RunResult& r);
// The terms as the run used them: "57 x 52.4 MB per batch",
// "working set 31.5 MB + 99.0 batches x 2.1 MB of data ahead".
std::string memory_terms(const RunResult& r);

// --- time -----------------------------------------------------------------------
struct ThroughputTerms {
  int batches = 0;            // N
  int every = 1;              // K (1: every batch; N or more: never)
  double host_s = 0;          // h
  double device_s = 0;        // d
  size_t fresh_bytes = 0;     // obtained from the system during the run
  double fresh_s_per_byte = 0;
  // The worker's measured seconds making fresh blocks resident (within
  // N·d); below 0: not measured, fresh_bytes × fresh_s_per_byte instead.
  double fresh_measured_s = -1;
};
double predicted_wall_s(const ThroughputTerms& t);
// The fresh term: the worker's measured backing time where there is one,
// else fresh_bytes × fresh_s_per_byte; at most N·d (the worker backs fresh
// blocks on the device's clock).
double fresh_s(const ThroughputTerms& t);
// d on resident memory: the measured d less the fresh term's share per batch (at least 0).
double resident_device_s(const ThroughputTerms& t);
// The wall time without fresh memory: N·max(h, d) + ceil(N/K)·min(h, d).
double predicted_wall_s(int batches, int every, double host_s, double device_s);

// The `every` the model uses for a mode: K for every=K, 1 for batch, the run's
// length for none and for a bounded run whose bound holds at least one batch
// (a bound under one batch makes the frontend wait for each: 1).
int model_every(const SyncMode& m, int batches, size_t max_pending_bytes, size_t bytes_per_batch);

// The peak backlog the time model implies for a loop that waits every K
// batches (its `every`): within a group the frontend queues batch j at j·h
// while the device, busy from the group's start, has finished floor(j·h/d)
// of them, so the group's last batch meets K - floor((K-1)·h/d) alive (1
// when h >= d, K with no host work). Back-pressure of B bytes holds it to
// B / bytes_per_batch + 1 (the batch being queued).
int predicted_backlog(int batches, int every, double host_s, double device_s, size_t max_pending_bytes,
                      size_t bytes_per_batch);

// "100 x max(h, d) + 10 x min(h, d) + fresh": the formula as the run used it.
std::string throughput_terms(const RunResult& r);

// Seconds the system takes to back one fresh byte of CPU memory: a probe of
// fresh 2 MiB-aligned huge-page-advised mappings made resident with
// MADV_POPULATE_WRITE (as the CPU pool does), timed; the median of a few.
// Measured on the first call, then remembered. 0 when it cannot be measured.
double fresh_s_per_byte();

// Whether a run may obtain enough fresh memory for the fresh term to count:
// one that lets a backlog of batches pile up in a CPU pool (enqueue, not
// synchronized every batch). Its cost is then probed as the run starts, on
// the memory the run is about to get.
bool may_need_fresh_memory(const RunSpec& s);
// Fresh bytes below this cost too little to measure what backing them costs.
constexpr size_t kFreshWorthMeasuring = size_t(64) << 20;

// --- communication (--distributed mpi) -------------------------------------------
// A run across processes adds the reductions' exposed time to d: each
// layer's weight and bias are all-reduced (alpha + beta x bytes each, one at
// a time on the communication queue) as soon as the backward queued them,
// last layer first, overlapped with the backward of the layers before it;
// what runs past the backward's end is exposed (and in batch mode the
// loss's own reduction, alpha). The backward is taken as 2/3 of d, shared
// between the layers by their in x out.
struct CommCost {
  double alpha_s = 0;          // an all-reduce's latency
  double beta_s_per_byte = 0;  // its seconds per byte
};
// Collective, measured once per process (a few all-reduces of 4 bytes and
// 4 MiB, rank 0's figures broadcast), then remembered.
CommCost comm_cost(dist::ProcessGroup& g);
// The exposed seconds per batch of a run of `s` whose device takes device_s per batch.
double exposed_comm_s(const RunSpec& s, double device_s, const CommCost& c);

// The models as --help states them.
std::string models_help();
// The one-line formulas the tables' footers quote.
extern const char* const kThroughputFormula;  // "N x max(h, d) + ceil(N/K) x min(h, d) + fresh"

}  // namespace amlp::train
