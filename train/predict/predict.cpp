#include "train/predict/predict.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <vector>

#include "framework/core/memory/step_memory.h"
#include "framework/parse.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

namespace amlp::train {

size_t graph_slots_bytes(size_t bytes_per_batch) { return StepSlots::kSlots * bytes_per_batch; }

size_t predicted_increase(const RunResult& r, size_t i) {
  const DeviceResult& d = r.measured.per_device.at(i);
  // The data queue is the first device's (the data is drawn there).
  if (r.asked.options.alloc == AllocPolicy::Run)
    return d.working_set_bytes + (i == 0 ? r.measured.peak_data_ahead_bytes : 0);
  // Stream-ordered reuse: each batch's dropped blocks serve the next batch's
  // ops, however many batches are queued: one batch's allocations.
  if (r.asked.options.alloc == AllocPolicy::Stream && !r.asked.options.graph) return d.bytes_per_batch;
  // A batch's blocks on this device may still be read by another device's
  // queue (the all-reduce reads every replica's gradient) after this queue
  // finished the batch: the batches alive on any queue count (one device: its own).
  // Back-pressure caps the bytes each queue's pending ops hold; the op
  // waiting to be queued has already allocated its output.
  size_t p = backlog_increase(r.measured.peak_backlog_batches, d.bytes_per_batch, r.asked.options.max_pending_bytes,
                              r.measured.largest_tensor_bytes);
  // --graph on: a batch's buffers are its graph slot's (core/memory/step_memory.h),
  // handed to the batch two later once no handle holds them, however many
  // batches are queued: the slots hold the run's batches.
  if (r.asked.options.graph) p = std::min(p, graph_slots_bytes(d.bytes_per_batch));
  return p;
}

size_t backlog_increase(int backlog_batches, size_t bytes_per_batch, size_t max_pending_bytes, size_t largest_tensor_bytes) {
  size_t p = static_cast<size_t>(std::max(0, backlog_batches)) * bytes_per_batch;
  if (max_pending_bytes) p = std::min(p, max_pending_bytes + largest_tensor_bytes);
  return p;
}

size_t predicted_increase(const RunResult& r) {
  size_t p = 0;
  for (size_t i = 0; i < r.measured.per_device.size(); ++i) p += predicted_increase(r, i);
  return p;
}

std::string memory_terms(const RunResult& r) {
  if (r.asked.options.alloc == AllocPolicy::Run) {
    std::string t = "working set " + format_mb(double(r.measured.working_set_bytes));
    if (r.asked.options.data_queue) {
      char lead[32];
      std::snprintf(lead, sizeof lead, "%.1f", r.measured.peak_data_lead_batches);
      t += std::string(" + ") + lead + " batches x " + format_mb(double(r.measured.data_bytes_per_batch)) +
           " of data ahead";
    }
    return t;
  }
  if (r.asked.options.alloc == AllocPolicy::Stream && !r.asked.options.graph)
    return "one batch x " + format_mb(double(r.measured.bytes_per_batch)) + " (blocks reused in stream order)";
  if (r.asked.options.graph && r.predicted.increase_bytes == graph_slots_bytes(r.measured.bytes_per_batch) &&
      r.predicted.increase_bytes < size_t(r.measured.peak_backlog_batches) * r.measured.bytes_per_batch)
    return std::to_string(StepSlots::kSlots) + " graph slots x " + format_mb(double(r.measured.bytes_per_batch)) +
           " per batch";
  if (r.predicted.increase_bytes < size_t(r.measured.peak_backlog_batches) * r.measured.bytes_per_batch)
    return "max-pending-bytes + one op's output";
  return std::to_string(r.measured.peak_backlog_batches) + " x " + format_mb(double(r.measured.bytes_per_batch)) +
         " per batch";
}

double predicted_wall_s(int batches, int every, double host_s, double device_s) {
  if (batches <= 0) return 0;
  every = std::clamp(every, 1, batches);
  const int groups = (batches + every - 1) / every;
  return batches * std::max(host_s, device_s) + groups * std::min(host_s, device_s);
}

double fresh_s(const ThroughputTerms& t) {
  // The worker backs the fresh blocks on the device's clock, so they cannot
  // have cost more than its busy time: a probe that read more was disturbed.
  const double f = t.fresh_measured_s >= 0 ? t.fresh_measured_s : double(t.fresh_bytes) * t.fresh_s_per_byte;
  return std::min(f, std::max(0, t.batches) * t.device_s);
}

double resident_device_s(const ThroughputTerms& t) {
  if (t.batches <= 0) return t.device_s;
  return std::max(0.0, t.device_s - fresh_s(t) / t.batches);
}

double predicted_wall_s(const ThroughputTerms& t) {
  if (t.batches <= 0) return 0;
  return predicted_wall_s(t.batches, t.every, t.host_s, resident_device_s(t)) + fresh_s(t);
}

int model_every(const SyncMode& m, int batches, size_t max_pending_bytes, size_t bytes_per_batch) {
  switch (m.policy) {
    case SyncPolicy::EveryBatch:
      return 1;
    case SyncPolicy::EveryK:
      return std::max(1, m.every);
    case SyncPolicy::Never:
      if (max_pending_bytes && max_pending_bytes < bytes_per_batch) return 1;
      return std::max(1, batches);
  }
  return 1;
}

int predicted_backlog(int batches, int every, double host_s, double device_s, size_t max_pending_bytes,
                      size_t bytes_per_batch) {
  if (batches <= 0) return 0;
  const int k = std::clamp(every, 1, batches);
  int alive = k;
  if (device_s <= 0 || host_s >= device_s) {
    alive = 1;
  } else if (host_s > 0) {
    alive = k - static_cast<int>(std::floor(double(k - 1) * host_s / device_s));
  }
  if (max_pending_bytes && bytes_per_batch)
    alive = std::min<int64_t>(alive, static_cast<int64_t>(max_pending_bytes / bytes_per_batch) + 1);
  return std::max(1, alive);
}

std::string throughput_terms(const RunResult& r) {
  const int n = r.measured.batches_done, k = std::clamp(r.predicted.every, 1, std::max(1, n));
  const int groups = n > 0 ? (n + k - 1) / k : 0;
  std::string t = k == 1 ? std::to_string(n) + " x (h + d)"
                         : std::to_string(n) + " x max(h, d) + " +
                               (groups == 1 ? std::string("min(h, d)") : std::to_string(groups) + " x min(h, d)");
  if (r.measured.comm_alpha_s > 0)
    t += ", d + " + std::to_string(r.predicted.comm_exposed_s * 1e3).substr(0, 5) + " ms exposed comm";
  if (r.measured.fresh_counted ? r.predicted.fresh_s > 0 : r.measured.fresh_bytes && r.measured.fresh_s_per_gib > 0) {
    char f[96];
    if (r.measured.fresh_counted)
      std::snprintf(f, sizeof f, " + fresh %.3f s (measured)", r.predicted.fresh_s);
    else
      std::snprintf(f, sizeof f, " + %s fresh x %.2f s/GiB", format_mb(double(r.measured.fresh_bytes)).c_str(),
                    r.measured.fresh_s_per_gib);
    t += f;
  }
  return t;
}

namespace {

// One probe: a fresh 2 MiB-aligned mapping of `len` bytes, advised
// MADV_HUGEPAGE and made resident with MADV_POPULATE_WRITE 2 MiB at a time,
// as the CPU pool's populator does. Its seconds, or -1; the mapping is kept
// (in `maps`) so the next probe gets pages of its own.
double probe_once(size_t len, std::vector<std::pair<void*, size_t>>& maps) {
  constexpr size_t kAlign = size_t(2) << 20;
  const auto t0 = std::chrono::steady_clock::now();
  void* m = mmap(nullptr, len + kAlign, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return -1;
  maps.emplace_back(m, len + kAlign);
  char* p = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(m) + kAlign - 1) & ~(uintptr_t(kAlign) - 1));
  madvise(p, len, MADV_HUGEPAGE);
  for (size_t off = 0; off < len; off += kAlign)
    if (madvise(p + off, std::min(kAlign, len - off), MADV_POPULATE_WRITE) != 0) return -1;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

bool may_need_fresh_memory(const RunSpec& s) {
  bool cpu = false;
  for (const Device& d : run_devices(s.options)) cpu = cpu || !d.is_cuda();
  return cpu && s.options.alloc == AllocPolicy::Enqueue && s.options.sync.policy != SyncPolicy::EveryBatch;
}

double fresh_s_per_byte() {
  static std::once_flag once;
  static double cost = 0;
  std::call_once(once, [] {
    constexpr size_t kProbe = size_t(4) << 20;
    constexpr int kProbes = 5;  // 20 MiB in all: a few ms to tens of ms
    std::vector<std::pair<void*, size_t>> maps;
    std::vector<double> s;
    for (int i = 0; i < kProbes; ++i)
      if (const double t = probe_once(kProbe, maps); t >= 0) s.push_back(t);
    for (const auto& [m, len] : maps) munmap(m, len);
    if (s.size() < size_t(kProbes)) return;  // no MADV_POPULATE_WRITE: not measured
    std::nth_element(s.begin(), s.begin() + kProbes / 2, s.end());
    cost = s[kProbes / 2] / double(kProbe);
  });
  return cost;
}

const char* const kThroughputFormula = "N x max(h, d) + ceil(N/K) x min(h, d) + fresh";

std::string models_help() {
  return
      "\nMemory model (what the summary's 'predicted' line computes), --alloc enqueue (the default):\n"
      "  Every queued op holds its outputs (and its inputs) until it has run, so the memory a\n"
      "  run holds is what its pending batches hold.\n"
      "    bytes per batch  = bytes the frontend allocates for one batch: data generation,\n"
      "                       forward, loss, backward, SGD step (the change in the pool's\n"
      "                       bytes_allocated_total across the batch; gradients are released\n"
      "                       after each step, so a finished batch keeps nothing)\n"
      "    backlog          = batches alive: those whose last op has not completed, plus the\n"
      "                       one being queued (a synchronized run has a backlog of 1)\n"
      "    predicted increase = peak backlog x bytes per batch; with --max-pending-bytes B,\n"
      "                       at most B + one op's largest output\n"
      "  Freed memory returns to the pool as the worker finishes ops, so this is an upper\n"
      "  bound, exact when the backlog is work not yet started (the unsynchronized run).\n"
      "  Memory increase is the peak of tracked bytes in use during the run minus the bytes in\n"
      "  use at its start (after the model is initialised); the RSS increase likewise from the\n"
      "  process's resident set (sampled every batch and after waitall).\n"
      "--alloc run (MXNet's delayed allocation): an op's outputs get memory only when the worker\n"
      "  starts it, so queued work holds nothing and the backlog costs no memory:\n"
      "    working set      = the most bytes the device queue's pending ops held in blocks that\n"
      "                       exist (QueueStats: a block counts once allocated), less the bytes in\n"
      "                       use at the start (the parameters): the op running and what the rest\n"
      "                       of its batch still needs\n"
      "    data ahead       = with --data-queue, the data generated but not yet consumed at its\n"
      "                       peak: data bytes per batch (X and y) x peak data lead (batches), the\n"
      "                       most bytes the data queue's outputs held while training ops still\n"
      "                       needed them; 0 without it (each batch's data is made in its turn)\n"
      "    predicted increase = working set + data ahead\n"
      "  --data-queue generates each batch's data on a second queue of the device (a loader\n"
      "  stream); the training ops wait for it through the cross-queue dependencies, so the\n"
      "  data runs ahead of the training while the training holds one batch (CPU devices only).\n"
      "  The summary's 'frontend, device' d is the device queue's busy time (the data queue's\n"
      "  is not included).\n"
      "\nThroughput model (the summary's 'predicted wall' line):\n"
      "    h = the frontend's time per batch: --host-work and queueing the batch (its waits for the\n"
      "        device excluded), d = the device's time per batch: the queue's busy time\n"
      "    synchronizing every K batches, the device runs a group while the frontend queues the\n"
      "    next batches, so  wall = " + std::string(kThroughputFormula) + ":\n"
      "    N x (h + d) for batch, N x max(h, d) + min(h, d) for none, and for bounded when its\n"
      "    bound holds a batch.\n"
      "    fresh = the seconds the device's worker spent making fresh blocks resident (those the\n"
      "        pool's populator thread had not finished), counted by the CPU pool where it\n"
      "        pays them; without those counters, the bytes the pools obtained from the system x\n"
      "        a probe's seconds per byte. The worker backs a fresh block before writing it,\n"
      "        inside its busy time, so with fresh memory d is the busy time per batch less\n"
      "        fresh / N: the device's time on resident memory. The summary's 'd per batch' line\n"
      "        takes d apart: kernels (their own time) + fresh memory + rest (the remainder)\n"
      "  Unsynchronized overlaps the two, so the speed-up over batch is at most 2x, at h = d. With\n"
      "  h > d the device finishes each batch before the next is queued: the backlog stays near one\n"
      "  batch in every mode. On a CPU device the frontend's own work (memory it touches) shares\n"
      "  the cores with the device; d on CUDA is the GPU's own time per batch (CUDA events on its\n"
      "  stream, DeviceTimer), not the time to launch.\n";
}

}  // namespace amlp::train
