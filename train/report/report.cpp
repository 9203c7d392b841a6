// report.cpp — what a run prints: the summary, the --compare tables and the
// --compare-policies table, with the memory and throughput models' terms.
#include "train/report/report.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ostream>

#include "framework/parse.h"
#include "train/runs/experiment.h"
#include "train/models/predict.h"

namespace amlp::train {

namespace {

// Why a run with host work shows little backlog or little speed-up: which
// side is the bottleneck. "" when neither dominates or there is no host work.
std::string bottleneck_note(const RunResult& r) {
  if (!r.asked.host_work.ns) return "";
  const double h = r.host_s_per_batch, d = r.device_s_per_batch;
  if (h > 1.2 * d)
    return "the frontend is the bottleneck (h > d): the device finishes each batch before the next is queued, so "
           "the backlog stays near one batch whatever the mode, and not waiting saves at most d per batch";
  if (d > 1.2 * h)
    return "the device is the bottleneck (d > h): unsynchronized, the backlog grows by about 1 - h/d batches per "
           "batch, and not waiting saves at most h per batch";
  return "";
}

}  // namespace

void print_policy_table(const std::vector<RunResult>& rs, std::ostream& out) {
  if (rs.empty()) return;
  char buf[256];
  out << "\n" << rs[0].device << ", " << rs[0].asked.batches << " batches of " << rs[0].asked.batch_size << ", unsynchronized\n";
  std::snprintf(buf, sizeof buf, "%-9s %-31s %12s %13s %9s %10s %11s\n", "policy", "behaves like", "mem incr MB",
                "predicted MB", "meas/pred", "samples/s", "final loss");
  out << buf;
  for (size_t i = 0; i < rs.size(); ++i) {
    const RunResult& r = rs[i];
    std::snprintf(buf, sizeof buf, "%-9s %-31s %12.1f %13.1f %9.3f %10.0f %11.6g\n", r.label().c_str(),
                  r.asked.like.c_str(), r.mem_increase_bytes / 1e6,
                  r.predicted.increase_bytes / 1e6,
                  r.predicted.increase_bytes ? double(r.mem_increase_bytes) / double(r.predicted.increase_bytes) : 0.0,
                  r.samples_per_s, r.final_loss);
    out << buf;
  }
  out << "predicted: enqueue = peak backlog x bytes per batch; run = the working set (+ the data generated ahead\n"
      << "with the data queue). The book's MXNet run 2 grew by 199 MB at 100 batches of 1024: the data ahead.\n";
  out.flush();
}

void print_summary(const RunResult& r, std::ostream& out) {
  char buf[256];
  auto line = [&](const char* key, const std::string& v) {
    out << "  " << key << std::string(20 - std::min<size_t>(20, std::strlen(key)), ' ') << v << "\n";
  };
  out << "summary\n";
  line("device", r.device + (r.ranks.empty() ? "" : " on each of " + std::to_string(r.ranks.size()) + " ranks (--distributed mpi)"));
  const RunSpec& s = r.asked;
  std::string mode = to_string(s.sync);
  if (s.max_pending_ops || s.max_pending_bytes) {
    mode += " with back-pressure (";
    if (s.max_pending_ops) mode += std::to_string(s.max_pending_ops) + " ops";
    if (s.max_pending_ops && s.max_pending_bytes) mode += ", ";
    if (s.max_pending_bytes) mode += format_mb(double(s.max_pending_bytes));
    mode += ")";
  }
  line("mode", mode);
  if (!s.sync_chosen.empty()) line("sync auto", s.sync_chosen);
  const int total = s.total_batches();
  if (r.batches_done < total)
    std::snprintf(buf, sizeof buf, "%.3f s (%d of %d batches of %d: %s)", r.wall_s, r.batches_done, total,
                  s.batch_size, to_string(r.status));
  else if (s.epochs > 1)
    std::snprintf(buf, sizeof buf, "%.3f s (%d epochs of %d batches of %d)", r.wall_s, s.epochs, s.batches,
                  s.batch_size);
  else
    std::snprintf(buf, sizeof buf, "%.3f s (%d batches of %d)", r.wall_s, s.batches, s.batch_size);
  line("wall time", buf);
  for (const EpochResult& e : r.epochs) {
    std::snprintf(buf, sizeof buf,
                  "%.0f samples/s, memory +%s (reserved %s), fresh %s backed (the worker %.3f s), loss %.6g",
                  e.samples_per_s, format_mb(double(e.mem_increase_bytes)).c_str(),
                  format_mb(double(e.peak_reserved_bytes)).c_str(), format_mb(double(e.fresh_bytes)).c_str(),
                  e.fresh_worker_s, e.loss);
    const std::string key = "epoch " + std::to_string(e.epoch);
    line(key.c_str(), buf);
  }
  std::snprintf(buf, sizeof buf, "%.0f", r.samples_per_s);
  line("samples/s", buf);
  line("memory increase",
       format_mb(double(r.mem_increase_bytes)) + " tracked, " + format_mb(double(r.rss_increase_bytes)) + " RSS");
  std::snprintf(buf, sizeof buf, "%llu ops, %d batch%s", static_cast<unsigned long long>(r.peak_queue_depth),
                r.peak_backlog_batches, r.peak_backlog_batches == 1 ? "" : "es");
  line("peak queue depth", buf);
  line("allocation", s.alloc == AllocPolicy::Run ? "run (an op's outputs get memory when the worker starts it)"
                                       : "enqueue (an op's outputs get memory when it is queued)");
  if (s.graph) {
    const StepGraphStats& g = r.graph;
    std::snprintf(buf, sizeof buf, "%llu of %llu batches held: %llu recorded, %llu replayed, %llu re-recorded",
                  static_cast<unsigned long long>(g.captured + g.replayed + g.updated),
                  static_cast<unsigned long long>(g.steps), static_cast<unsigned long long>(g.captured),
                  static_cast<unsigned long long>(g.replayed), static_cast<unsigned long long>(g.updated));
    std::string extra = "; graph slots hold " + format_mb(double(g.slot_bytes));
    if (g.capture_failures)
      extra += "; " + std::to_string(g.capture_failures) + " failed recording" + (g.capture_failures == 1 ? "" : "s") +
               " ran one by one";
    line("graph", buf + std::string(s.device.is_cuda() ? "" : " (verdicts: a CPU runs held ops one by one)") + extra +
                      (g.last_reason.empty() ? std::string() : "; last fallback: " + g.last_reason));
  }
  if (s.data_queue) {
    std::snprintf(buf, sizeof buf, "on the data queue, %s per batch, at most %.1f batches ahead",
                  format_mb(double(r.data_bytes_per_batch)).c_str(), r.peak_data_lead_batches);
    line("data", buf);
  }
  std::snprintf(buf, sizeof buf, " (measured / predicted = %.3f)",
                r.predicted.increase_bytes ? double(r.mem_increase_bytes) / double(r.predicted.increase_bytes) : 0.0);
  line("predicted increase", format_mb(double(r.predicted.increase_bytes)) + " = " +
                                 (r.data_parallel() ? std::string("the devices' sum") : memory_terms(r)) + buf);
  if (r.data_parallel()) {
    for (size_t i = 0; i < r.per_device.size(); ++i) {
      const DeviceResult& d = r.per_device[i];
      // The model's terms on this device: the enqueue backlog, or run's working set (and the data ahead, on the first).
      std::string terms;
      if (s.alloc == AllocPolicy::Run)
        terms = "working set " + format_mb(double(d.working_set_bytes)) +
                (i == 0 && s.data_queue ? " + data ahead " + format_mb(double(r.peak_data_ahead_bytes)) : "");
      else
        terms = std::to_string(r.peak_backlog_batches) + " x " + format_mb(double(d.bytes_per_batch)) + " per batch";
      std::snprintf(buf, sizeof buf, "%lld rows a batch; memory +%s, predicted %s = %s (%.3f); d %.3f ms per batch",
                    static_cast<long long>(d.rows_per_batch), format_mb(double(d.mem_increase_bytes)).c_str(),
                    format_mb(double(d.predicted_increase_bytes)).c_str(), terms.c_str(),
                    d.predicted_increase_bytes ? double(d.mem_increase_bytes) / double(d.predicted_increase_bytes) : 0.0,
                    d.device_s_per_batch * 1e3);
      line(("  " + d.device).c_str(), buf);
    }
    if (r.blas_threads) line("BLAS threads", std::to_string(r.blas_threads) + " per CPU GEMM (the cores shared by the CPU devices)");
  }
  for (const RankResult& k : r.ranks) {  // across processes: each rank's own figures
    std::snprintf(buf, sizeof buf, "memory +%s, predicted %s (%.3f); %.0f samples/s; h %.3f ms, d %.3f ms per batch",
                  format_mb(double(k.mem_increase_bytes)).c_str(), format_mb(double(k.predicted_increase_bytes)).c_str(),
                  k.predicted_increase_bytes ? double(k.mem_increase_bytes) / double(k.predicted_increase_bytes) : 0.0,
                  k.samples_per_s, k.host_s_per_batch * 1e3, k.device_s_per_batch * 1e3);
    line(("  rank " + std::to_string(k.rank)).c_str(), buf);
  }
  if (r.comm_alpha_s > 0) {
    std::snprintf(buf, sizeof buf,
                  "all-reduce alpha %.1f us, beta %.3f ms/MB; exposed %.3f ms per batch; step predicted %.3f ms "
                  "(d + exposed), measured %.3f ms (wall / batches)",
                  r.comm_alpha_s * 1e6, r.comm_beta_s_per_byte * 1e9, r.predicted.comm_exposed_s * 1e3,
                  (r.device_s_per_batch + r.predicted.comm_exposed_s) * 1e3,
                  r.batches_done ? r.wall_s / r.batches_done * 1e3 : 0.0);
    line("communication", buf);
  }
  std::snprintf(buf, sizeof buf, "%.0f in the median batch of the second half, %.0f per batch overall, %llu in all",
                r.minor_faults_steady_per_batch, r.minor_faults_per_batch,
                static_cast<unsigned long long>(r.minor_faults));
  line("minor page faults", buf);
  if (s.host_work.ns) {
    std::snprintf(buf, sizeof buf, "%.3f ms per batch (%s)", s.host_work.ns / 1e6, to_string(s.host_work.kind).c_str());
    line("host work", buf);
  }
  std::snprintf(buf, sizeof buf, "h %.3f ms, d %.3f ms per batch (h: the loop's own time; d: the queue's busy time)",
                r.host_s_per_batch * 1e3, r.device_s_per_batch * 1e3);
  line("frontend, device", buf);
  char wide[512];
  if (r.d_measured) {  // the decomposition: two measured terms and the remainder
    const double d = r.device_s_per_batch;
    std::snprintf(wide, sizeof wide,
                  "%.3f ms = kernels %.3f + fresh memory %.3f (%s backed by the worker) + rest %.3f (the "
                  "remainder: allocation, bookkeeping; kernels + fresh = %.3f of d)",
                  d * 1e3, r.d_kernels_s * 1e3, r.d_fresh_s * 1e3, format_mb(double(r.fresh_worker_bytes)).c_str(),
                  r.d_rest_s * 1e3, d > 0 ? (r.d_kernels_s + r.d_fresh_s) / d : 0.0);
    std::string v = wide;
    if (r.batches_done && r.fresh_populator_s > 0) {  // off the worker's clock, at idle priority
      std::snprintf(wide, sizeof wide, "; off d, the populator backed fresh memory %.3f ms per batch",
                    r.fresh_populator_s / r.batches_done * 1e3);
      v += wide;
    }
    line("d per batch", v);
  }
  if (r.fresh_counted && r.fresh_worker_bytes + r.fresh_populator_bytes > 0) {
    std::snprintf(wide, sizeof wide,
                  "%s obtained from the system; backed by the worker (%s in %.3f s) and by the populator thread "
                  "(%s in %.3f s, off the worker's clock; %.3f ms per batch), %.3f s per GiB as measured: %.3f s "
                  "of d (%.3f ms per batch)",
                  format_mb(double(r.fresh_bytes)).c_str(), format_mb(double(r.fresh_worker_bytes)).c_str(),
                  r.fresh_worker_populate_s, format_mb(double(r.fresh_populator_bytes)).c_str(), r.fresh_populator_s,
                  r.batches_done ? r.fresh_populator_s / r.batches_done * 1e3 : 0.0, r.fresh_s_per_gib, r.predicted.fresh_s,
                  r.batches_done ? r.predicted.fresh_s / r.batches_done * 1e3 : 0.0);
    line("fresh memory", wide);
  } else if (!r.fresh_counted && r.fresh_s_per_gib > 0) {
    std::snprintf(buf, sizeof buf, "%s obtained from the system, backed at %.3f s per GiB here (a probe's): %.3f s (%.3f ms of d per batch)",
                  format_mb(double(r.fresh_bytes)).c_str(), r.fresh_s_per_gib, r.predicted.fresh_s,
                  r.batches_done ? r.predicted.fresh_s / r.batches_done * 1e3 : 0.0);
    line("fresh memory", buf);
  }
  std::snprintf(buf, sizeof buf, "%.3f s = %s (measured / predicted = %.3f)", r.predicted.wall_s,
                throughput_terms(r).c_str(), r.predicted.wall_s > 0 ? r.wall_s / r.predicted.wall_s : 0.0);
  line("predicted wall", buf);
  if (const std::string why = bottleneck_note(r); !why.empty()) line("note", why);
  std::snprintf(buf, sizeof buf, "%.6g", r.final_loss);
  line("final loss", buf);
  line("memory limit", r.memory_limit_bytes ? format_mb(double(r.memory_limit_bytes)) + " (" + r.memory_limit_source + ")"
                                            : r.memory_limit_source);
  out.flush();
}

void print_compare_table(const std::vector<RunResult>& rs, std::ostream& out) {
  if (rs.empty()) return;
  char buf[256];
  out << "\n" << rs[0].device << ", " << rs[0].asked.batches << " batches of " << rs[0].asked.batch_size << "\n";
  std::snprintf(buf, sizeof buf, "%-10s %8s %10s %12s %12s %13s %11s %12s %9s %11s %13s\n", "mode", "wall s",
                "samples/s", "mem incr MB", "RSS incr MB", "peak backlog", "peak depth", "predicted MB", "meas/pred",
                "final loss", "faults/batch");
  out << buf;
  for (const RunResult& r : rs) {
    std::snprintf(buf, sizeof buf, "%-10s %8.3f %10.0f %12.1f %12.1f %13d %11llu %12.1f %9.3f %11.6g %13.0f\n",
                  r.label().c_str(), r.wall_s, r.samples_per_s, r.mem_increase_bytes / 1e6, r.rss_increase_bytes / 1e6,
                  r.peak_backlog_batches, static_cast<unsigned long long>(r.peak_queue_depth),
                  r.predicted.increase_bytes / 1e6,
                  r.predicted.increase_bytes ? double(r.mem_increase_bytes) / double(r.predicted.increase_bytes) : 0.0,
                  r.final_loss, r.minor_faults_steady_per_batch);
    out << buf;
  }
  out << "peak backlog: most batches alive at once; peak depth: most ops queued at once.\n"
      << (rs[0].asked.alloc == AllocPolicy::Run ? "predicted = " + memory_terms(rs[0]) + " (--alloc run; each mode its own)\n"
                               : "predicted = peak backlog x " + format_mb(double(rs[0].bytes_per_batch)) +
                                     " per batch (at most max-pending-bytes + one op's output when bounded)\n")
      << "faults/batch: the process's minor page faults in the median batch of the run's second half.\n";
  if (rs[0].asked.epochs > 1) {  // each epoch of each mode, against `batch`'s same epoch
    const RunResult* batch = nullptr;
    for (const RunResult& r : rs)
      if (r.label() == "batch") batch = &r;
    out << "\nper epoch (" << rs[0].asked.epochs << " epochs of " << rs[0].asked.batches << " batches)\n";
    std::snprintf(buf, sizeof buf, "%-10s %5s %10s %10s %9s %12s %12s %10s %9s %11s\n", "mode", "epoch", "samples/s",
                  "predicted", "vs batch", "mem incr MB", "reserved MB", "fresh MB", "fresh s", "loss");
    out << buf;
    for (const RunResult& r : rs)
      for (const EpochResult& e : r.epochs) {
        const EpochResult* b = batch && size_t(e.epoch) <= batch->epochs.size() ? &batch->epochs[e.epoch - 1] : nullptr;
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
  if (rs[0].data_parallel()) {  // each device's memory against its own prediction
    out << "\nper device (data parallel)\n";
    std::snprintf(buf, sizeof buf, "%-10s %-8s %6s %12s %12s %9s %13s %9s\n", "mode", "device", "rows", "mem incr MB",
                  "predicted MB", "meas/pred", "peak backlog", "d ms");
    out << buf;
    for (const RunResult& r : rs)
      for (const DeviceResult& d : r.per_device) {
        std::snprintf(buf, sizeof buf, "%-10s %-8s %6lld %12.1f %12.1f %9.3f %13d %9.3f\n", r.label().c_str(),
                      d.device.c_str(), static_cast<long long>(d.rows_per_batch), d.mem_increase_bytes / 1e6,
                      d.predicted_increase_bytes / 1e6,
                      d.predicted_increase_bytes ? double(d.mem_increase_bytes) / double(d.predicted_increase_bytes) : 0.0,
                      d.peak_backlog_batches, d.device_s_per_batch * 1e3);
        out << buf;
      }
  }

  if (!rs[0].ranks.empty()) {  // across processes: each rank's memory against its own prediction
    out << "\nper rank (--distributed mpi)\n";
    std::snprintf(buf, sizeof buf, "%-10s %5s %12s %12s %9s %10s %9s %9s\n", "mode", "rank", "mem incr MB",
                  "predicted MB", "meas/pred", "samples/s", "h ms", "d ms");
    out << buf;
    for (const RunResult& r : rs)
      for (const RankResult& k : r.ranks) {
        std::snprintf(buf, sizeof buf, "%-10s %5d %12.1f %12.1f %9.3f %10.0f %9.3f %9.3f\n", r.label().c_str(), k.rank,
                      k.mem_increase_bytes / 1e6, k.predicted_increase_bytes / 1e6,
                      k.predicted_increase_bytes ? double(k.mem_increase_bytes) / double(k.predicted_increase_bytes) : 0.0,
                      k.samples_per_s, k.host_s_per_batch * 1e3, k.device_s_per_batch * 1e3);
        out << buf;
      }
  }

  // The throughput side: what not waiting bought, against the model.
  const RunResult* base = nullptr;
  for (const RunResult& r : rs)
    if (r.label() == "batch") base = &r;
  out << "\n";
  if (const HostWork& w = rs[0].asked.host_work; w.ns) {
    std::snprintf(buf, sizeof buf, "host work %.3f ms per batch (%s)\n", w.ns / 1e6, to_string(w.kind).c_str());
    out << buf;
  }
  std::snprintf(buf, sizeof buf, "%-10s %8s %10s %9s %9s %9s %12s %10s\n", "mode", "wall s", "samples/s", "vs batch",
                "h ms", "d ms", "predicted s", "meas/pred");
  out << buf;
  for (const RunResult& r : rs) {
    std::snprintf(buf, sizeof buf, "%-10s %8.3f %10.0f %9.2f %9.3f %9.3f %12.3f %10.3f\n", r.label().c_str(), r.wall_s,
                  r.samples_per_s, base && base->samples_per_s > 0 ? r.samples_per_s / base->samples_per_s : 0.0,
                  r.host_s_per_batch * 1e3, r.device_s_per_batch * 1e3, r.predicted.wall_s,
                  r.predicted.wall_s > 0 ? r.wall_s / r.predicted.wall_s : 0.0);
    out << buf;
  }
  out << "h: the frontend's time per batch (host work and queueing, its waits excluded); d: the device's (the\n"
      << "queue's busy time). predicted = " << kThroughputFormula << ", K the sync interval (N for\n"
      << "none and bounded; fresh: the worker's measured time backing fresh memory): not waiting overlaps\n"
      << "the frontend's work with the device's.\n";
  out.flush();
}

}  // namespace amlp::train
