// report.cpp — what a run prints: the summary, the --compare tables and the
// --compare-policies table, with the memory and throughput models' terms.
#include "train/report/report.h"

#include <algorithm>
#include <cstdio>
#include <ostream>

#include "framework/parse.h"
#include "train/runs/experiment.h"
#include "train/predict/predict.h"
#include "train/report/run_figures.h"

namespace amlp::train {

void print_policy_table(const std::vector<RunResult>& rs, std::ostream& out) {
  if (rs.empty()) return;
  char buf[256];
  out << "\n"
      << rs[0].measured.device << ", " << rs[0].asked.options.batches << " batches of "
      << rs[0].asked.options.batch_size << ", unsynchronized\n";
  std::snprintf(buf, sizeof buf, "%-9s %-31s %12s %13s %9s %10s %11s\n", "policy", "behaves like", "mem incr MB",
                "predicted MB", "meas/pred", "samples/s", "final loss");
  out << buf;
  for (size_t i = 0; i < rs.size(); ++i) {
    const RunResult& r = rs[i];
    std::snprintf(
        buf, sizeof buf, "%-9s %-31s %12.1f %13.1f %9.3f %10.0f %11.6g\n", r.label().c_str(), r.asked.like.c_str(),
        r.measured.mem_increase_bytes / 1e6, r.predicted.increase_bytes / 1e6,
        r.predicted.increase_bytes ? double(r.measured.mem_increase_bytes) / double(r.predicted.increase_bytes) : 0.0,
        r.measured.samples_per_s, r.measured.final_loss);
    out << buf;
  }
  out << "predicted: enqueue = peak backlog x bytes per batch; run = the working set (+ the data generated ahead\n"
      << "with the data queue); stream = one batch's bytes (each batch reuses the dropped blocks of the one\n"
      << "before). The book's MXNet run 2 grew by 199 MB at 100 batches of 1024: the data ahead.\n";
  out.flush();
}

void print_summary(const RunResult& r, std::ostream& out) {
  out << "summary\n";
  for (const auto& [label, text] : summary_lines(r))
    out << "  " << label << std::string(20 - std::min<size_t>(20, label.size()), ' ') << text << "\n";
  out.flush();
}

namespace {

// --compare's tables, one function each: the memory table, then where the
// runs have them the epochs', the devices' and the ranks', then the throughput table.
void memory_table(const std::vector<RunResult>& rs, std::ostream& out) {
  char buf[256];
  out << "\n"
      << rs[0].measured.device << ", " << rs[0].asked.options.batches << " batches of "
      << rs[0].asked.options.batch_size << "\n";
  std::snprintf(buf, sizeof buf, "%-10s %8s %10s %12s %12s %13s %11s %12s %9s %11s %13s\n", "mode", "wall s",
                "samples/s", "mem incr MB", "RSS incr MB", "peak backlog", "peak depth", "predicted MB", "meas/pred",
                "final loss", "faults/batch");
  out << buf;
  for (const RunResult& r : rs) {
    std::snprintf(
        buf, sizeof buf, "%-10s %8.3f %10.0f %12.1f %12.1f %13d %11llu %12.1f %9.3f %11.6g %13.0f\n", r.label().c_str(),
        r.measured.wall_s, r.measured.samples_per_s, r.measured.mem_increase_bytes / 1e6,
        r.measured.rss_increase_bytes / 1e6, r.measured.peak_backlog_batches,
        static_cast<unsigned long long>(r.measured.peak_queue_depth), r.predicted.increase_bytes / 1e6,
        r.predicted.increase_bytes ? double(r.measured.mem_increase_bytes) / double(r.predicted.increase_bytes) : 0.0,
        r.measured.final_loss, r.measured.minor_faults_steady_per_batch);
    out << buf;
  }
  out << "peak backlog: most batches alive at once; peak depth: most ops queued at once.\n"
      << (rs[0].asked.options.alloc != AllocPolicy::Enqueue
              ? "predicted = " + memory_terms(rs[0]) + " (--alloc " + to_string(rs[0].asked.options.alloc) +
                    "; each mode its own)\n"
              : "predicted = peak backlog x " + format_mb(double(rs[0].measured.bytes_per_batch)) +
                    " per batch (at most max-pending-bytes + one op's output when bounded)\n")
      << "faults/batch: the process's minor page faults in the median batch of the run's second half.\n";
}

// Each epoch of each mode, against `batch`'s same epoch.
void epoch_table(const std::vector<RunResult>& rs, std::ostream& out) {
  if (rs[0].asked.options.epochs <= 1) return;
  char buf[256];
  const RunResult* batch = nullptr;
  for (const RunResult& r : rs)
    if (r.label() == "batch") batch = &r;
  out << "\nper epoch (" << rs[0].asked.options.epochs << " epochs of " << rs[0].asked.options.batches << " batches)\n";
  std::snprintf(buf, sizeof buf, "%-10s %5s %10s %10s %9s %12s %12s %10s %9s %11s\n", "mode", "epoch", "samples/s",
                "predicted", "vs batch", "mem incr MB", "reserved MB", "fresh MB", "fresh s", "loss");
  out << buf;
  for (const RunResult& r : rs)
    for (const EpochResult& e : r.measured.epochs) {
      const EpochResult* b =
          batch && size_t(e.epoch) <= batch->measured.epochs.size() ? &batch->measured.epochs[e.epoch - 1] : nullptr;
      std::snprintf(buf, sizeof buf, "%-10s %5d %10.0f %10.0f %9.2f %12.1f %12.1f %10.1f %9.3f %11.6g\n",
                    r.label().c_str(), e.epoch, e.samples_per_s, e.predicted_samples_per_s,
                    b && b->samples_per_s > 0 ? e.samples_per_s / b->samples_per_s : 0.0,
                    e.mem_increase_bytes / 1e6, e.peak_reserved_bytes / 1e6, e.fresh_bytes / 1e6, e.fresh_worker_s,
                    e.loss);
      out << buf;
    }
  out << "an epoch: its first batch queued to its last loss read (every mode reads it); predicted: the throughput\n"
         "model on the epoch's own h and d (CPU queues; 0 on a GPU); mem incr: its peak bytes in\n"
         "use over those at its start; reserved: the most the pool held; fresh: memory the system backed in it, and\n"
         "the worker's seconds backing it (the pool reuses its blocks after the first epoch).\n";
}

// Data parallel: each device's memory against its own prediction.
void device_table(const std::vector<RunResult>& rs, std::ostream& out) {
  if (!rs[0].data_parallel()) return;
  char buf[256];
  out << "\nper device (data parallel)\n";
  std::snprintf(buf, sizeof buf, "%-10s %-8s %6s %12s %12s %9s %13s %9s\n", "mode", "device", "rows", "mem incr MB",
                "predicted MB", "meas/pred", "peak backlog", "d ms");
  out << buf;
  for (const RunResult& r : rs)
    for (const DeviceResult& d : r.measured.per_device) {
      std::snprintf(buf, sizeof buf, "%-10s %-8s %6lld %12.1f %12.1f %9.3f %13d %9.3f\n", r.label().c_str(),
                    d.device.c_str(), static_cast<long long>(d.rows_per_batch), d.mem_increase_bytes / 1e6,
                    d.predicted_increase_bytes / 1e6,
                    d.predicted_increase_bytes ? double(d.mem_increase_bytes) / double(d.predicted_increase_bytes) : 0.0,
                    d.peak_backlog_batches, d.device_s_per_batch * 1e3);
      out << buf;
    }
}

// Across processes: each rank's memory against its own prediction.
void rank_table(const std::vector<RunResult>& rs, std::ostream& out) {
  if (rs[0].measured.ranks.empty()) return;
  char buf[256];
  out << "\nper rank (--distributed mpi)\n";
  std::snprintf(buf, sizeof buf, "%-10s %5s %12s %12s %9s %10s %9s %9s\n", "mode", "rank", "mem incr MB",
                "predicted MB", "meas/pred", "samples/s", "h ms", "d ms");
  out << buf;
  for (const RunResult& r : rs)
    for (const RankResult& k : r.measured.ranks) {
      std::snprintf(buf, sizeof buf, "%-10s %5d %12.1f %12.1f %9.3f %10.0f %9.3f %9.3f\n", r.label().c_str(), k.rank,
                    k.mem_increase_bytes / 1e6, k.predicted_increase_bytes / 1e6,
                    k.predicted_increase_bytes ? double(k.mem_increase_bytes) / double(k.predicted_increase_bytes) : 0.0,
                    k.samples_per_s, k.host_s_per_batch * 1e3, k.device_s_per_batch * 1e3);
      out << buf;
    }
}

// The throughput side: what not waiting bought, against the model.
void throughput_table(const std::vector<RunResult>& rs, std::ostream& out) {
  char buf[256];
  const RunResult* base = nullptr;
  for (const RunResult& r : rs)
    if (r.label() == "batch") base = &r;
  out << "\n";
  if (const HostWork& w = rs[0].asked.options.host_work; w.ns) {
    std::snprintf(buf, sizeof buf, "host work %.3f ms per batch (%s)\n", w.ns / 1e6, to_string(w.kind).c_str());
    out << buf;
  }
  std::snprintf(buf, sizeof buf, "%-10s %8s %10s %9s %9s %9s %12s %10s\n", "mode", "wall s", "samples/s", "vs batch",
                "h ms", "d ms", "predicted s", "meas/pred");
  out << buf;
  for (const RunResult& r : rs) {
    std::snprintf(
        buf, sizeof buf, "%-10s %8.3f %10.0f %9.2f %9.3f %9.3f %12.3f %10.3f\n", r.label().c_str(), r.measured.wall_s,
        r.measured.samples_per_s,
        base && base->measured.samples_per_s > 0 ? r.measured.samples_per_s / base->measured.samples_per_s : 0.0,
        r.measured.host_s_per_batch * 1e3, r.measured.device_s_per_batch * 1e3, r.predicted.wall_s,
        r.predicted.wall_s > 0 ? r.measured.wall_s / r.predicted.wall_s : 0.0);
    out << buf;
  }
  out << "h: the frontend's time per batch (host work and queueing, its waits excluded); d: the device's (the\n"
      << "queue's busy time). predicted = " << kThroughputFormula << ", K the sync interval (N for\n"
      << "none and bounded; fresh: the worker's measured time backing fresh memory): not waiting overlaps\n"
      << "the frontend's work with the device's.\n";
}

}  // namespace

void print_compare_table(const std::vector<RunResult>& rs, std::ostream& out) {
  if (rs.empty()) return;
  memory_table(rs, out);
  epoch_table(rs, out);
  device_table(rs, out);
  rank_table(rs, out);
  throughput_table(rs, out);
  out.flush();
}

}  // namespace amlp::train
