// The tables of run_figures.h: every key of a run's summary object, in the
// order the summary writes them, with its unit and meaning, and the printed
// summary's lines each run figure leads (the functions above the tables).
#include "train/report/run_figures.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <string>

#include "framework/parse.h"
#include "train/predict/predict.h"

namespace amlp::train {

namespace {

// null where a number is not finite (a diverged run's loss), as JSON has no NaN.
Json finite(double v) { return std::isfinite(v) ? Json(v) : Json(); }
// null where a text is empty ("no error", "not chosen").
Json text_or_null(const std::string& s) { return s.empty() ? Json() : Json(s); }

// The printed summary's lines (print_summary in report.cpp prints them, a
// label and its text each), one function per figure that leads them (its
// row below names it). Each adds its run's line(s), or none where the run
// has nothing to say there.
using Lines = SummaryLines;

// printf into a std::string (the lines' numbers are formatted as printf does).
__attribute__((format(printf, 1, 2))) std::string fmt(const char* f, ...) {
  char buf[512];
  va_list args;
  va_start(args, f);
  std::vsnprintf(buf, sizeof buf, f, args);
  va_end(args);
  return buf;
}
double ratio(double measured, double predicted) { return predicted ? measured / predicted : 0.0; }
double per_batch_ms(const RunResult& r, double s) {
  return r.measured.batches_done ? s / r.measured.batches_done * 1e3 : 0.0;
}

void device_line(const RunResult& r, Lines& out) {
  out.emplace_back("device", r.measured.device + (r.measured.ranks.empty()
                                                      ? ""
                                                      : " on each of " + std::to_string(r.measured.ranks.size()) +
                                                            " ranks (--distributed mpi)"));
}

void mode_lines(const RunResult& r, Lines& out) {
  const RunSpec& s = r.asked;
  std::string mode = to_string(s.options.sync);
  if (s.options.max_pending_ops || s.options.max_pending_bytes) {
    mode += " with back-pressure (";
    if (s.options.max_pending_ops) mode += std::to_string(s.options.max_pending_ops) + " ops";
    if (s.options.max_pending_ops && s.options.max_pending_bytes) mode += ", ";
    if (s.options.max_pending_bytes) mode += format_mb(double(s.options.max_pending_bytes));
    mode += ")";
  }
  out.emplace_back("mode", mode);
  if (!s.options.sync_chosen.empty()) out.emplace_back("sync auto", s.options.sync_chosen);
}

void wall_line(const RunResult& r, Lines& out) {
  const RunSpec& s = r.asked;
  const int total = s.options.total_batches();
  if (r.measured.batches_done < total)
    out.emplace_back("wall time", fmt("%.3f s (%d of %d batches of %d: %s)", r.measured.wall_s, r.measured.batches_done,
                                      total, s.options.batch_size, to_string(r.measured.status)));
  else if (s.options.epochs > 1)
    out.emplace_back("wall time", fmt("%.3f s (%d epochs of %d batches of %d)", r.measured.wall_s, s.options.epochs,
                                      s.options.batches, s.options.batch_size));
  else
    out.emplace_back("wall time",
                     fmt("%.3f s (%d batches of %d)", r.measured.wall_s, s.options.batches, s.options.batch_size));
}

void epoch_lines(const RunResult& r, Lines& out) {
  for (const EpochResult& e : r.measured.epochs)
    out.emplace_back("epoch " + std::to_string(e.epoch),
                     fmt("%.0f samples/s, memory +%s (reserved %s), fresh %s backed (the worker %.3f s), loss %.6g",
                         e.samples_per_s, format_mb(double(e.mem_increase_bytes)).c_str(),
                         format_mb(double(e.peak_reserved_bytes)).c_str(), format_mb(double(e.fresh_bytes)).c_str(),
                         e.fresh_worker_s, e.loss));
}

void samples_line(const RunResult& r, Lines& out) {
  out.emplace_back("samples/s", fmt("%.0f", r.measured.samples_per_s));
}

void memory_increase_line(const RunResult& r, Lines& out) {
  out.emplace_back("memory increase", format_mb(double(r.measured.mem_increase_bytes)) + " tracked, " +
                                          format_mb(double(r.measured.rss_increase_bytes)) + " RSS");
}

void queue_depth_line(const RunResult& r, Lines& out) {
  out.emplace_back("peak queue depth",
                   fmt("%llu ops, %d batch%s", static_cast<unsigned long long>(r.measured.peak_queue_depth),
                       r.measured.peak_backlog_batches, r.measured.peak_backlog_batches == 1 ? "" : "es"));
}

void allocation_line(const RunResult& r, Lines& out) {
  const char* how = r.asked.options.alloc == AllocPolicy::Run ? "run (an op's outputs get memory when the worker starts it)"
                    : r.asked.options.alloc == AllocPolicy::Stream
                        ? "stream (outputs get memory when queued; a dropped tensor's block serves the next op on its queue)"
                        : "enqueue (an op's outputs get memory when it is queued)";
  out.emplace_back("allocation", how);
}

void graph_line(const RunResult& r, Lines& out) {
  if (!r.asked.options.graph) return;
  const StepGraphStats& g = r.measured.graph;
  using ull = unsigned long long;
  std::string text = fmt("%llu of %llu batches held: %llu recorded, %llu replayed, %llu re-recorded",
                         ull(g.captured + g.replayed + g.updated), ull(g.steps), ull(g.captured), ull(g.replayed),
                         ull(g.updated));
  if (!r.asked.options.device.is_cuda()) text += " (verdicts: a CPU runs held ops one by one)";
  text += "; graph slots hold " + format_mb(double(g.slot_bytes));
  if (g.capture_failures)
    text += "; " + std::to_string(g.capture_failures) + " failed recording" + (g.capture_failures == 1 ? "" : "s") +
            " ran one by one";
  if (!g.last_reason.empty()) text += "; last fallback: " + g.last_reason;
  out.emplace_back("graph", text);
}

void data_line(const RunResult& r, Lines& out) {
  if (!r.asked.options.data_queue) return;
  out.emplace_back("data",
                   fmt("on the data queue, %s per batch, at most %.1f batches ahead",
                       format_mb(double(r.measured.data_bytes_per_batch)).c_str(), r.measured.peak_data_lead_batches));
}

// The memory model's prediction, and with --devices each device's share.
void predicted_increase_lines(const RunResult& r, Lines& out) {
  out.emplace_back("predicted increase",
                   format_mb(double(r.predicted.increase_bytes)) + " = " +
                       (r.data_parallel() ? std::string("the devices' sum") : memory_terms(r)) +
                       fmt(" (measured / predicted = %.3f)",
                           ratio(double(r.measured.mem_increase_bytes), double(r.predicted.increase_bytes))));
  if (!r.data_parallel()) return;
  for (size_t i = 0; i < r.measured.per_device.size(); ++i) {
    const DeviceResult& d = r.measured.per_device[i];
    // The model's terms on this device: the enqueue backlog, or run's working set (and the data ahead, on the first).
    std::string terms;
    if (r.asked.options.alloc == AllocPolicy::Run)
      terms =
          "working set " + format_mb(double(d.working_set_bytes)) +
          (i == 0 && r.asked.options.data_queue ? " + data ahead " + format_mb(double(r.measured.peak_data_ahead_bytes))
                                                : "");
    else if (r.asked.options.alloc == AllocPolicy::Stream && !r.asked.options.graph)
      terms = "one batch x " + format_mb(double(d.bytes_per_batch));
    else
      terms =
          std::to_string(r.measured.peak_backlog_batches) + " x " + format_mb(double(d.bytes_per_batch)) + " per batch";
    out.emplace_back("  " + d.device,
                     fmt("%lld rows a batch; memory +%s, predicted %s = %s (%.3f); d %.3f ms per batch",
                         static_cast<long long>(d.rows_per_batch), format_mb(double(d.mem_increase_bytes)).c_str(),
                         format_mb(double(d.predicted_increase_bytes)).c_str(), terms.c_str(),
                         ratio(double(d.mem_increase_bytes), double(d.predicted_increase_bytes)), d.device_s_per_batch * 1e3));
  }
}

void blas_threads_line(const RunResult& r, Lines& out) {
  if (r.measured.blas_threads)
    out.emplace_back("BLAS threads",
                     std::to_string(r.measured.blas_threads) + " per CPU GEMM (the cores shared by the CPU devices)");
}

// Across processes: each rank's own figures; the communication term.
void rank_lines(const RunResult& r, Lines& out) {
  for (const RankResult& k : r.measured.ranks)
    out.emplace_back("  rank " + std::to_string(k.rank),
                     fmt("memory +%s, predicted %s (%.3f); %.0f samples/s; h %.3f ms, d %.3f ms per batch",
                         format_mb(double(k.mem_increase_bytes)).c_str(), format_mb(double(k.predicted_increase_bytes)).c_str(),
                         ratio(double(k.mem_increase_bytes), double(k.predicted_increase_bytes)), k.samples_per_s,
                         k.host_s_per_batch * 1e3, k.device_s_per_batch * 1e3));
}

void communication_line(const RunResult& r, Lines& out) {
  if (r.measured.comm_alpha_s > 0)
    out.emplace_back(
        "communication",
        fmt("all-reduce alpha %.1f us, beta %.3f ms/MB; exposed %.3f ms per batch; step predicted %.3f ms "
            "(d + exposed), measured %.3f ms (wall / batches)",
            r.measured.comm_alpha_s * 1e6, r.measured.comm_beta_s_per_byte * 1e9, r.predicted.comm_exposed_s * 1e3,
            (r.measured.device_s_per_batch + r.predicted.comm_exposed_s) * 1e3, per_batch_ms(r, r.measured.wall_s)));
}

void faults_line(const RunResult& r, Lines& out) {
  out.emplace_back("minor page faults",
                   fmt("%.0f in the median batch of the second half, %.0f per batch overall, %llu in all",
                       r.measured.minor_faults_steady_per_batch, r.measured.minor_faults_per_batch,
                       static_cast<unsigned long long>(r.measured.minor_faults)));
}

void host_work_line(const RunResult& r, Lines& out) {
  if (r.asked.options.host_work.ns)
    out.emplace_back("host work", fmt("%.3f ms per batch (%s)", r.asked.options.host_work.ns / 1e6,
                                      to_string(r.asked.options.host_work.kind).c_str()));
}

void frontend_device_line(const RunResult& r, Lines& out) {
  out.emplace_back("frontend, device",
                   fmt("h %.3f ms, d %.3f ms per batch (h: the loop's own time; d: the queue's busy time)",
                       r.measured.host_s_per_batch * 1e3, r.measured.device_s_per_batch * 1e3));
}

// d taken apart (CPU devices): two measured terms and the remainder.
void d_line(const RunResult& r, Lines& out) {
  if (!r.measured.d_measured) return;
  const double d = r.measured.device_s_per_batch;
  std::string v =
      fmt("%.3f ms = kernels %.3f + fresh memory %.3f (%s backed by the worker) + rest %.3f (the "
          "remainder: allocation, bookkeeping; kernels + fresh = %.3f of d)",
          d * 1e3, r.measured.d_kernels_s * 1e3, r.measured.d_fresh_s * 1e3,
          format_mb(double(r.measured.backing.worker_bytes)).c_str(), r.measured.d_rest_s * 1e3,
          d > 0 ? (r.measured.d_kernels_s + r.measured.d_fresh_s) / d : 0.0);
  if (r.measured.batches_done && r.measured.backing.populator_s > 0)  // off the worker's clock, at idle priority
    v += fmt("; off d, the populator backed fresh memory %.3f ms per batch",
             per_batch_ms(r, r.measured.backing.populator_s));
  out.emplace_back("d per batch", v);
}

void fresh_line(const RunResult& r, Lines& out) {
  if (r.measured.fresh_counted && r.measured.backing.worker_bytes + r.measured.backing.populator_bytes > 0)
    out.emplace_back(
        "fresh memory",
        fmt("%s obtained from the system; backed by the worker (%s in %.3f s) and by the populator thread "
            "(%s in %.3f s, off the worker's clock; %.3f ms per batch), %.3f s per GiB as measured: %.3f s "
            "of d (%.3f ms per batch)",
            format_mb(double(r.measured.fresh_bytes)).c_str(),
            format_mb(double(r.measured.backing.worker_bytes)).c_str(), r.measured.backing.worker_populate_s,
            format_mb(double(r.measured.backing.populator_bytes)).c_str(), r.measured.backing.populator_s,
            per_batch_ms(r, r.measured.backing.populator_s), r.measured.fresh_s_per_gib, r.predicted.fresh_s,
            per_batch_ms(r, r.predicted.fresh_s)));
  else if (!r.measured.fresh_counted && r.measured.fresh_s_per_gib > 0)
    out.emplace_back("fresh memory",
                     fmt("%s obtained from the system, backed at %.3f s per GiB here (a probe's): %.3f s (%.3f ms of d "
                         "per batch)",
                         format_mb(double(r.measured.fresh_bytes)).c_str(), r.measured.fresh_s_per_gib,
                         r.predicted.fresh_s, per_batch_ms(r, r.predicted.fresh_s)));
}

// Why a run with host work shows little backlog or little speed-up: which
// side is the bottleneck. None when neither dominates or there is no host work.
void predicted_wall_lines(const RunResult& r, Lines& out) {
  out.emplace_back("predicted wall", fmt("%.3f s = %s (measured / predicted = %.3f)", r.predicted.wall_s,
                                         throughput_terms(r).c_str(), ratio(r.measured.wall_s, r.predicted.wall_s)));
  if (!r.asked.options.host_work.ns) return;
  const double h = r.measured.host_s_per_batch, d = r.measured.device_s_per_batch;
  if (h > 1.2 * d)
    out.emplace_back("note", "the frontend is the bottleneck (h > d): the device finishes each batch before the next "
                             "is queued, so the backlog stays near one batch whatever the mode, and not waiting saves "
                             "at most d per batch");
  else if (d > 1.2 * h)
    out.emplace_back("note", "the device is the bottleneck (d > h): unsynchronized, the backlog grows by about 1 - h/d "
                             "batches per batch, and not waiting saves at most h per batch");
}

void final_loss_line(const RunResult& r, Lines& out) {
  out.emplace_back("final loss", fmt("%.6g", r.measured.final_loss));
}

void memory_limit_line(const RunResult& r, Lines& out) {
  out.emplace_back("memory limit", r.measured.memory_limit_bytes ? format_mb(double(r.measured.memory_limit_bytes)) +
                                                                       " (" + r.measured.memory_limit_source + ")"
                                                                 : r.measured.memory_limit_source);
}

// Where each figure's lines come in the printed summary (its order, which is
// not the table's: the device first, the epochs after the wall time, ...).
enum Place : int {
  kDevice, kMode, kWall, kEpochs, kSamples, kMemoryIncrease, kQueueDepth, kAllocation, kGraph, kData,
  kPredictedIncrease, kBlasThreads, kRanks, kCommunication, kFaults, kHostWork, kFrontendDevice, kDParts,
  kFresh, kPredictedWall, kFinalLoss, kMemoryLimit
};

// The tables: one row a key, in the summary's order.
// clang-format off
const std::vector<RunFigure> kRunFigures = {
  {"mode", "", "the synchronization mode: `batch`, `none`, `every=K`, `auto`", [](const RunResult& r) -> Json { return to_string(r.asked.options.sync); }, {kMode, mode_lines}},
  {"label", "", "the name the run is reported under (`batch`, `every=10`, `bounded`, `run+data`, ...)", [](const RunResult& r) -> Json { return r.asked.label; }},
  {"device", "", "the device, or the devices joined by commas (`--devices`)", [](const RunResult& r) -> Json { return r.measured.device; }, {kDevice, device_line}},
  {"batches", "batches", "the batches asked for (each epoch's)", [](const RunResult& r) -> Json { return r.asked.options.batches; }},
  {"batch_size", "rows", "the rows of each batch, all devices' together", [](const RunResult& r) -> Json { return r.asked.options.batch_size; }},
  {"wall_s", "s", "the loop's wall time, its first batch queued to its last loss read", [](const RunResult& r) -> Json { return r.measured.wall_s; }, {kWall, wall_line}},
  {"samples_per_s", "samples/s", "the batches' rows over `wall_s`", [](const RunResult& r) -> Json { return r.measured.samples_per_s; }, {kSamples, samples_line}},
  {"mem_increase_bytes", "bytes", "the tracked pools' bytes in use at their peak, less the start's (the devices' sum)", [](const RunResult& r) -> Json { return r.measured.mem_increase_bytes; }, {kMemoryIncrease, memory_increase_line}},
  {"rss_increase_bytes", "bytes", "the process's peak sampled RSS less its RSS at the start", [](const RunResult& r) -> Json { return r.measured.rss_increase_bytes; }},
  {"peak_queue_depth", "ops", "the most ops queued and not yet launched at once", [](const RunResult& r) -> Json { return r.measured.peak_queue_depth; }, {kQueueDepth, queue_depth_line}},
  {"peak_backlog_batches", "batches", "the most batches alive (queued and not finished) at once", [](const RunResult& r) -> Json { return r.measured.peak_backlog_batches; }},
  {"peak_backlog_bytes", "bytes", "the most bytes the pending ops referenced at once", [](const RunResult& r) -> Json { return r.measured.peak_backlog_bytes; }},
  {"bytes_per_batch", "bytes", "what one batch allocates (the memory model's unit)", [](const RunResult& r) -> Json { return r.measured.bytes_per_batch; }},
  {"predicted_increase_bytes", "bytes", "the memory model's increase: peak backlog x bytes per batch, or `run`'s working set", [](const RunResult& r) -> Json { return r.predicted.increase_bytes; }, {kPredictedIncrease, predicted_increase_lines}},
  {"largest_tensor_bytes", "bytes", "one op's largest output, rounded as the pool rounds it", [](const RunResult& r) -> Json { return r.measured.largest_tensor_bytes; }},
  {"alloc_policy", "", "when an op's outputs get memory: `enqueue` (when queued), `run` (when the worker starts it) or `stream` (when queued, reusing dropped blocks in stream order)", [](const RunResult& r) -> Json { return to_string(r.asked.options.alloc); }, {kAllocation, allocation_line}},
  {"data_queue", "", "true: the batches are drawn on a queue of their own (`--data-queue`)", [](const RunResult& r) -> Json { return r.asked.options.data_queue; }, {kData, data_line}},
  {"data_bytes_per_batch", "bytes", "the blocks of one batch's X and y", [](const RunResult& r) -> Json { return r.measured.data_bytes_per_batch; }},
  {"peak_data_ahead_bytes", "bytes", "the data queue's peak backlog (0 without it)", [](const RunResult& r) -> Json { return r.measured.peak_data_ahead_bytes; }},
  {"peak_data_lead_batches", "batches", "`peak_data_ahead_bytes` over `data_bytes_per_batch`", [](const RunResult& r) -> Json { return r.measured.peak_data_lead_batches; }},
  {"working_set_bytes", "bytes", "the device queue's peak backlog less the start's bytes (`run`'s model)", [](const RunResult& r) -> Json { return r.measured.working_set_bytes; }},
  {"start_bytes", "bytes", "the tracked pools' bytes in use at the start", [](const RunResult& r) -> Json { return r.measured.start_bytes; }},
  {"peak_bytes", "bytes", "... at their peak", [](const RunResult& r) -> Json { return r.measured.peak_bytes; }},
  {"end_bytes", "bytes", "... at the end", [](const RunResult& r) -> Json { return r.measured.end_bytes; }},
  {"start_rss_bytes", "bytes", "the process's RSS at the start", [](const RunResult& r) -> Json { return r.measured.start_rss; }},
  {"peak_rss_bytes", "bytes", "... its peak sample", [](const RunResult& r) -> Json { return r.measured.peak_rss; }},
  {"end_rss_bytes", "bytes", "... at the end", [](const RunResult& r) -> Json { return r.measured.end_rss; }},
  {"max_pending_ops", "ops", "`--max-pending` (0: no bound)", [](const RunResult& r) -> Json { return r.asked.options.max_pending_ops; }},
  {"max_pending_bytes", "bytes", "`--max-pending-bytes` (0: no bound)", [](const RunResult& r) -> Json { return r.asked.options.max_pending_bytes; }},
  {"sync_auto", "", "`--sync auto`'s choice and why (null otherwise)", [](const RunResult& r) -> Json { return text_or_null(r.asked.options.sync_chosen); }},
  {"final_loss", "", "the last loss read (null when no batch finished or it is not finite)", [](const RunResult& r) -> Json { return finite(r.measured.final_loss); }, {kFinalLoss, final_loss_line}},
  {"losses", "", "each loss the loop read, `[batch, loss]`, at most 100000 (the memory log has every one)",
   [](const RunResult& r) -> Json {
     Json out = Json::array();
     for (const auto& [batch, loss] : r.measured.losses) out.push_back({batch, finite(loss)});
     return out;
   }},
  {"status", "", "`completed`, `failed` or `interrupted`", [](const RunResult& r) -> Json { return to_string(r.measured.status); }},
  {"failed", "", "true: the run failed (`error` says why)", [](const RunResult& r) -> Json { return r.measured.status == RunStatus::Failed; }},
  {"interrupted", "", "true: a signal ended the run", [](const RunResult& r) -> Json { return r.measured.status == RunStatus::Interrupted; }},
  {"error", "", "the line printed when it failed (null otherwise)", [](const RunResult& r) -> Json { return text_or_null(r.measured.error); }},
  {"batches_done", "batches", "the batches queued (and finished, once the run ended)", [](const RunResult& r) -> Json { return r.measured.batches_done; }},
  {"memory_limit_bytes", "bytes", "the device pool's cap during the run (null: none)", [](const RunResult& r) -> Json { return r.measured.memory_limit_bytes ? Json(r.measured.memory_limit_bytes) : Json(); }, {kMemoryLimit, memory_limit_line}},
  {"memory_limit_source", "", "where the cap came from", [](const RunResult& r) -> Json { return r.measured.memory_limit_source; }},
  {"minor_faults", "faults", "the process's minor page faults over the loop and the final waitall()", [](const RunResult& r) -> Json { return r.measured.minor_faults; }, {kFaults, faults_line}},
  {"minor_faults_per_batch", "faults", "`minor_faults` over the batches, the warm-up included", [](const RunResult& r) -> Json { return r.measured.minor_faults_per_batch; }},
  {"minor_faults_steady_per_batch", "faults", "the median batch's of the second half (the memory log's rows)", [](const RunResult& r) -> Json { return r.measured.minor_faults_steady_per_batch; }},
  {"host_work_s", "s", "`--host-work`: the frontend's simulated work per batch", [](const RunResult& r) -> Json { return r.asked.options.host_work.ns * 1e-9; }, {kHostWork, host_work_line}},
  {"host_work_kind", "", "`wait` or `compute`", [](const RunResult& r) -> Json { return to_string(r.asked.options.host_work.kind); }},
  {"host_s_per_batch", "s", "h, the throughput model's: the loop's own time per batch", [](const RunResult& r) -> Json { return r.measured.host_s_per_batch; }, {kFrontendDevice, frontend_device_line}},
  {"device_s_per_batch", "s", "d, the throughput model's: the slowest queue's busy time per batch", [](const RunResult& r) -> Json { return r.measured.device_s_per_batch; }},
  {"model_every", "batches", "the synchronization interval the throughput model used", [](const RunResult& r) -> Json { return r.predicted.every; }},
  {"predicted_wall_s", "s", "the throughput model's wall time", [](const RunResult& r) -> Json { return r.predicted.wall_s; }, {kPredictedWall, predicted_wall_lines}},
  {"data_parallel", "", "true: the batch was split across `--devices`", [](const RunResult& r) -> Json { return r.data_parallel(); }},
  {"blas_threads", "threads", "each CPU GEMM's threads with `--devices` (0: as set)", [](const RunResult& r) -> Json { return r.measured.blas_threads; }, {kBlasThreads, blas_threads_line}},
  {"devices", "", "one object per device (the next table)", [](const RunResult& r) -> Json { return figures_array(device_figures(), r.measured.per_device); }},
  {"device_allocs", "calls", "calls to the devices' own allocators during the run (cudaMalloc, ...)", [](const RunResult& r) -> Json { return r.measured.device_allocs; }},
  {"ops_per_batch", "ops", "ops queued per batch, every device's (the data's draw and the timers included)", [](const RunResult& r) -> Json { return r.measured.ops_per_batch; }},
  {"fresh_bytes", "bytes", "bytes the pools had to back fresh ([cpu-pool.md](cpu-pool.md))", [](const RunResult& r) -> Json { return r.measured.fresh_bytes; }, {kFresh, fresh_line}},
  {"fresh_s_per_gib", "s/GiB", "what backing a GiB of fresh memory costs here", [](const RunResult& r) -> Json { return r.measured.fresh_s_per_gib; }},
  {"fresh_s", "s", "the throughput model's fresh-memory term", [](const RunResult& r) -> Json { return r.predicted.fresh_s; }},
  {"fresh_counted", "", "true: the term is the worker's measured time; false: the probe's price x bytes", [](const RunResult& r) -> Json { return r.measured.fresh_counted; }},
  {"d_measured", "", "true: d is taken apart below (CPU devices)", [](const RunResult& r) -> Json { return r.measured.d_measured; }, {kDParts, d_line}},
  {"d_kernels_s", "s", "d's kernels, their own time per batch", [](const RunResult& r) -> Json { return r.measured.d_kernels_s; }},
  {"d_fresh_s", "s", "d's worker time backing fresh blocks, per batch", [](const RunResult& r) -> Json { return r.measured.d_fresh_s; }},
  {"d_rest_s", "s", "the rest of d per batch (allocation, bookkeeping): d less the two", [](const RunResult& r) -> Json { return r.measured.d_rest_s; }},
  {"fresh_worker_s", "s", "the worker's seconds in the CPU pools' backing (the lock and lookups included)", [](const RunResult& r) -> Json { return r.measured.backing.worker_s; }},
  {"fresh_worker_populate_s", "s", "... of which populating", [](const RunResult& r) -> Json { return r.measured.backing.worker_populate_s; }},
  {"fresh_backed_bytes", "bytes", "the bytes the worker backed", [](const RunResult& r) -> Json { return r.measured.backing.worker_bytes; }},
  {"fresh_populator_s", "s", "the populator thread's backing seconds, off the worker's clock", [](const RunResult& r) -> Json { return r.measured.backing.populator_s; }},
  {"fresh_populator_bytes", "bytes", "the bytes the populator thread backed", [](const RunResult& r) -> Json { return r.measured.backing.populator_bytes; }},
  {"distributed", "", "`true` with `--distributed mpi` (under mpirun or not), else `false`", [](const RunResult& r) -> Json { return r.asked.options.distributed; }},
  {"ranks", "", "`--distributed mpi`, written by rank 0: one object per rank (the rank table below)", [](const RunResult& r) -> Json { return figures_array(rank_figures(), r.measured.ranks); }, {kRanks, rank_lines}},
  {"comm_alpha_s", "s", "the all-reduce's measured latency, alpha", [](const RunResult& r) -> Json { return r.measured.comm_alpha_s; }, {kCommunication, communication_line}},
  {"comm_beta_s_per_byte", "s/byte", "the all-reduce's measured seconds per byte, beta", [](const RunResult& r) -> Json { return r.measured.comm_beta_s_per_byte; }},
  {"comm_exposed_s_per_batch", "s", "the reductions' exposed seconds per batch, as the model has them", [](const RunResult& r) -> Json { return r.predicted.comm_exposed_s; }},
  {"graph", "", "`--graph on`: the first device's step verdicts (the graph table below); null without", [](const RunResult& r) -> Json { return r.asked.options.graph ? figures_object(graph_figures(), r.measured.graph) : Json(); }, {kGraph, graph_line}},
  {"epochs", "", "with `--epochs E` > 1 only: `asked` (E) and `each`, one object per epoch that ended (the epoch table below)",
   [](const RunResult& r) -> Json { return {{"asked", r.asked.options.epochs}, {"each", figures_array(epoch_figures(), r.measured.epochs)}}; },
   {kEpochs, epoch_lines}, [](const RunResult& r) { return r.asked.options.epochs > 1; }},
};

const std::vector<Figure<DeviceResult>> kDeviceFigures = {
  {"device", "", "the device", [](const DeviceResult& d) -> Json { return d.device; }},
  {"rows_per_batch", "rows", "its part of each batch", [](const DeviceResult& d) -> Json { return d.rows_per_batch; }},
  {"start_bytes", "bytes", "its pool's bytes in use at the start", [](const DeviceResult& d) -> Json { return d.start_bytes; }},
  {"peak_bytes", "bytes", "... at their peak", [](const DeviceResult& d) -> Json { return d.peak_bytes; }},
  {"mem_increase_bytes", "bytes", "the peak less the start", [](const DeviceResult& d) -> Json { return d.mem_increase_bytes; }},
  {"bytes_per_batch", "bytes", "what one batch allocates on it", [](const DeviceResult& d) -> Json { return d.bytes_per_batch; }},
  {"predicted_increase_bytes", "bytes", "the memory model's increase on it", [](const DeviceResult& d) -> Json { return d.predicted_increase_bytes; }},
  {"peak_backlog_batches", "batches", "its queue's most batches alive at once", [](const DeviceResult& d) -> Json { return d.peak_backlog_batches; }},
  {"peak_queue_depth", "ops", "its queue's most ops queued and not yet launched", [](const DeviceResult& d) -> Json { return d.peak_queue_depth; }},
  {"peak_backlog_bytes", "bytes", "the most bytes its pending ops referenced", [](const DeviceResult& d) -> Json { return d.peak_backlog_bytes; }},
  {"working_set_bytes", "bytes", "its working set under `run`", [](const DeviceResult& d) -> Json { return d.working_set_bytes; }},
  {"device_s_per_batch", "s", "its queue's busy time per batch", [](const DeviceResult& d) -> Json { return d.device_s_per_batch; }},
};

const std::vector<Figure<RankResult>> kRankFigures = {
  {"rank", "", "the rank", [](const RankResult& k) -> Json { return k.rank; }},
  {"samples_per_s", "samples/s", "the global batch's samples over this rank's wall time", [](const RankResult& k) -> Json { return k.samples_per_s; }},
  {"wall_s", "s", "its loop's wall time", [](const RankResult& k) -> Json { return k.wall_s; }},
  {"mem_increase_bytes", "bytes", "its tracked memory's increase", [](const RankResult& k) -> Json { return k.mem_increase_bytes; }},
  {"predicted_increase_bytes", "bytes", "the memory model's, for it", [](const RankResult& k) -> Json { return k.predicted_increase_bytes; }},
  {"host_s_per_batch", "s", "its h", [](const RankResult& k) -> Json { return k.host_s_per_batch; }},
  {"device_s_per_batch", "s", "its d", [](const RankResult& k) -> Json { return k.device_s_per_batch; }},
};

const std::vector<Figure<EpochResult>> kEpochFigures = {
  {"epoch", "", "1, 2, ...", [](const EpochResult& e) -> Json { return e.epoch; }},
  {"batches", "batches", "the batches it ran", [](const EpochResult& e) -> Json { return e.batches; }},
  {"wall_s", "s", "its first batch queued to its last loss read", [](const EpochResult& e) -> Json { return e.wall_s; }},
  {"samples_per_s", "samples/s", "its rows over its wall time", [](const EpochResult& e) -> Json { return e.samples_per_s; }},
  {"mem_increase_bytes", "bytes", "the tracked bytes it added over those in use as it began", [](const EpochResult& e) -> Json { return e.mem_increase_bytes; }},
  {"peak_reserved_bytes", "bytes", "the most the pool reserved in it", [](const EpochResult& e) -> Json { return e.peak_reserved_bytes; }},
  {"peak_backlog_batches", "batches", "the most batches alive at a row of it", [](const EpochResult& e) -> Json { return e.peak_backlog_batches; }},
  {"host_s_per_batch", "s", "h over the epoch alone (CPU devices; 0 on a GPU)", [](const EpochResult& e) -> Json { return e.host_s_per_batch; }},
  {"device_s_per_batch", "s", "d over the epoch alone (CPU devices; 0 on a GPU)", [](const EpochResult& e) -> Json { return e.device_s_per_batch; }},
  {"predicted_samples_per_s", "samples/s", "the throughput model on its h and d (0 where not measured)", [](const EpochResult& e) -> Json { return e.predicted_samples_per_s; }},
  {"fresh_bytes", "bytes", "the fresh memory backed in it", [](const EpochResult& e) -> Json { return e.fresh_bytes; }},
  {"fresh_worker_s", "s", "the worker's seconds backing it", [](const EpochResult& e) -> Json { return e.fresh_worker_s; }},
  {"loss", "", "the loss read at its end", [](const EpochResult& e) -> Json { return e.loss; }},
};

const std::vector<Figure<StepGraphStats>> kGraphFigures = {
  {"steps", "batches", "the steps the verdicts cover", [](const StepGraphStats& g) -> Json { return g.steps; }},
  {"eager", "batches", "steps run op by op, held by no graph", [](const StepGraphStats& g) -> Json { return g.eager; }},
  {"captured", "batches", "steps recorded into a graph", [](const StepGraphStats& g) -> Json { return g.captured; }},
  {"replayed", "batches", "steps replayed from a graph", [](const StepGraphStats& g) -> Json { return g.replayed; }},
  {"updated", "batches", "steps re-recorded into a graph that changed", [](const StepGraphStats& g) -> Json { return g.updated; }},
  {"invalidations", "", "graphs dropped: the ops changed, an interrupt, a failure", [](const StepGraphStats& g) -> Json { return g.invalidations; }},
  {"capture_failures", "", "recordings or replays that failed: their ops ran one by one", [](const StepGraphStats& g) -> Json { return g.capture_failures; }},
  {"slot_bytes", "bytes", "the device's graph slots' blocks, busy and free", [](const StepGraphStats& g) -> Json { return g.slot_bytes; }},
  {"last_reason", "", "why the last armed step (or graph) was given up", [](const StepGraphStats& g) -> Json { return g.last_reason; }},
};
// clang-format on

}  // namespace

const std::vector<RunFigure>& run_figures() { return kRunFigures; }
const std::vector<Figure<DeviceResult>>& device_figures() { return kDeviceFigures; }
const std::vector<Figure<RankResult>>& rank_figures() { return kRankFigures; }
const std::vector<Figure<EpochResult>>& epoch_figures() { return kEpochFigures; }
const std::vector<Figure<StepGraphStats>>& graph_figures() { return kGraphFigures; }

Json run_json(const RunResult& r) { return figures_object(run_figures(), r); }

std::string figures_markdown() {
  return figures_table(run_figures()) + "\nEach of `devices`:\n\n" + figures_table(device_figures()) + "\nEach of `ranks`:\n\n" +
         figures_table(rank_figures()) + "\n`graph`:\n\n" + figures_table(graph_figures()) + "\nEach of `epochs`' `each`:\n\n" +
         figures_table(epoch_figures());
}


SummaryLines summary_lines(const RunResult& r) {
  // The rows that print, in the summary's order.
  static const std::vector<const RunFigure*> printing = [] {
    std::vector<const RunFigure*> rows;
    for (const RunFigure& f : run_figures())
      if (f.printed.lines) rows.push_back(&f);
    std::stable_sort(rows.begin(), rows.end(),
                     [](const RunFigure* a, const RunFigure* b) { return a->printed.place < b->printed.place; });
    return rows;
  }();
  SummaryLines out;
  for (const RunFigure* f : printing) f->printed.lines(r, out);
  return out;
}

}  // namespace amlp::train
