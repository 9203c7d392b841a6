// comparisons.cpp — the studies whose runs are modes back to back (--compare,
// --compare-policies): their runs, the heading before each, their tables and
// their options; and the one run --sync asks for (comparisons.h, study.h).
#include "train/studies/comparisons.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <ostream>

#include "framework/parse.h"
#include "train/plan/plan.h"
#include "train/predict/predict.h"
#include "train/runs/distributed_run.h"
#include "train/runs/run_plan.h"
#include "train/options/study_options.h"
#include "train/studies/study.h"

namespace amlp::train {

std::vector<int> read_compare_every(const std::string& t) {
  constexpr int64_t kMaxCompareEvery = 1000000;
  std::vector<int> out;
  for (int64_t k : parse_int_list(t, "", 1, kMaxCompareEvery)) {
    if (std::find(out.begin(), out.end(), k) != out.end())
      throw ParseError("", "names " + std::to_string(k) + " twice (got " + quote(t) + ")");
    out.push_back(static_cast<int>(k));
  }
  return out;
}

namespace {

// "\n== none ==", "\n== bounded (none, max-pending-bytes 7.6 MB) ==",
// "\n== graph (none, --graph on) ==": the heading of a --compare run.
std::string compare_heading(const RunSpec& p) {
  const Options& o = p.options;
  std::string h = "\n== " + p.label;
  if (o.graph)
    h += " (none, --graph on)";
  else if (o.max_pending_bytes)
    h += " (none, max-pending-bytes " + format_mb(double(o.max_pending_bytes)) + ")";
  return h + " ==";
}

// --compare's bounded run without --max-pending-bytes: bounded at two
// batches' footprint, the largest bytes per batch of the runs before it.
void bound_from_earlier(Options& o, const std::vector<RunResult>& earlier) {
  size_t bpb = 0;
  for (const RunResult& r : earlier) bpb = std::max(bpb, r.measured.bytes_per_batch);
  o.max_pending_bytes = 2 * bpb;
  if (dist::ProcessGroup* g = rank_group(o))  // every rank bounded alike
    o.max_pending_bytes = static_cast<size_t>(rank0_value(*g, int64_t(o.max_pending_bytes)));
}

}  // namespace

std::vector<RunSpec> compare_plan(const Options& o, const std::vector<int>& every) {
  std::vector<RunSpec> plan;
  std::vector<SyncMode> syncs{{SyncPolicy::EveryBatch, 1}, {SyncPolicy::Never, 0}};
  for (int k : every) syncs.push_back({SyncPolicy::EveryK, k});
  for (const SyncMode& m : syncs) {
    plan.push_back(planned_run(o, to_string(m), file_tag(m)));
    plan.back().options.sync = m;
    plan.back().options.max_pending_ops = 0;
    plan.back().options.max_pending_bytes = 0;
  }
  plan.push_back(planned_run(o, "bounded", "bounded"));
  plan.back().options.sync = {SyncPolicy::Never, 0};
  if (o.max_pending_bytes == 0) plan.back().from_earlier = bound_from_earlier;
  add_graph_row(o, plan);
  for (RunSpec& p : plan) p.heading = compare_heading;
  return plan;
}

std::string one_model_problem(const Options& o, const char* study) {
  if (o.save.empty()) return "";
  return std::string("--save keeps one run's parameters: not with ") + study +
         ", which trains a model per mode (use --load to start them all from one file)";
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

// --compare's table: memory, then epochs, devices and ranks where the runs
// have them, then throughput.
void print_compare_table(const std::vector<RunResult>& rs, std::ostream& out) {
  if (rs.empty()) return;
  memory_table(rs, out);
  epoch_table(rs, out);
  device_table(rs, out);
  rank_table(rs, out);
  throughput_table(rs, out);
  out.flush();
}

// The --compare-policies table: each policy's memory against its prediction,
// beside the framework it behaves like (`like`, by the run's tag).
void print_policy_table(const std::vector<RunResult>& rs, const std::map<std::string, std::string>& like,
                        std::ostream& out) {
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
        buf, sizeof buf, "%-9s %-31s %12.1f %13.1f %9.3f %10.0f %11.6g\n", r.label().c_str(), like.count(r.asked.tag) ? like.at(r.asked.tag).c_str() : "",
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

// "\n== run+data (--sync none --alloc run --data-queue) ==": the heading of a
// --compare-policies run.
std::string policy_heading(const RunSpec& p) {
  const Options& o = p.options;
  return "\n== " + p.label + " (--sync none --alloc " + to_string(o.alloc) + (o.data_queue ? " --data-queue" : "") +
         (o.graph ? " --graph on" : "") + ") ==";
}

struct SingleRun : Study {};  // the defaults: the plan's one run, its summary

struct Compare : Study {
  std::vector<RunSpec> plan(const Options& o) const override {
    return compare_plan(o, o.studies.find<CompareSettings>()->every);
  }
  void report(const Options&, const std::vector<RunResult>& results, std::ostream& out) const override {
    print_compare_table(results, out);
  }
};

// The allocation policies, unsynchronized. On a GPU a block is reused as soon
// as its last op is launched (the stream orders the rest): allocating at
// launch as well is what PyTorch's caching allocator does, with no queue in
// front of the stream.
struct ComparePolicies : Study {
  struct Policy {
    AllocPolicy alloc;
    bool data_queue;
    const char* tag;
    const char* like;  // the framework that behaves like it, in the table
  };
  static std::vector<Policy> policies(const Options& o) {
    const bool cuda = run_devices(o).front().is_cuda();
    std::vector<Policy> out{
        {AllocPolicy::Enqueue, false, "enqueue", "queued ops own their outputs"},
        {AllocPolicy::Run, false, "run", cuda ? "allocated at launch" : "MXNet's engine, delayed alloc"}};
    if (!cuda) out.push_back({AllocPolicy::Run, true, "run+data", "MXNet, data ops running ahead"});
    out.push_back({AllocPolicy::Stream, false, "stream", "PyTorch's caching allocator"});
    return out;
  }
  std::vector<RunSpec> plan(const Options& o) const override {
    std::vector<RunSpec> plan;
    for (const Policy& p : policies(o)) {
      plan.push_back(planned_run(o, p.tag, p.tag));
      plan.back().options.sync = {SyncPolicy::Never, 0};
      plan.back().options.alloc = p.alloc;
      plan.back().options.data_queue = p.data_queue;
    }
    add_graph_row(o, plan);
    for (RunSpec& p : plan) p.heading = policy_heading;
    return plan;
  }
  void report(const Options& o, const std::vector<RunResult>& results, std::ostream& out) const override {
    std::map<std::string, std::string> like{{"graph", "CUDA graphs, one launch a batch"}};
    for (const Policy& p : policies(o)) like[p.tag] = p.like;
    print_policy_table(results, like, out);
  }
};

// The run --sync asks for when no other study makes the runs: the last resort.
const RegisterStudy single_run{{"single run", false, 1000, [](const Options&) { return true; },
                                [] { return std::unique_ptr<Study>(std::make_unique<SingleRun>()); }}};
const RegisterStudy compare{{"compare", false, 20, [](const Options& o) { return o.studies.asked<CompareSettings>(); },
                             [] { return std::unique_ptr<Study>(std::make_unique<Compare>()); }}};
const RegisterStudy compare_policies{{"compare-policies", false, 30,
                                      [](const Options& o) { return o.studies.asked<PoliciesSettings>(); },
                                      [] { return std::unique_ptr<Study>(std::make_unique<ComparePolicies>()); }}};

// clang-format off
const RegisterStudyOptions compare_options{{"compare", 20,
    [](Declare& d) {
      d.flag("compare", "run every mode back to back and print one table (see below; default: off)")
       .option<std::vector<int>>("compare-every", "K1,K2,..", "2,10", read_compare_every,
        "the K of the every=K modes --compare runs, each in [1, 1000000], none twice");
    },
    [](const po::variables_map& vm) -> std::any {
      if (!vm["compare"].as<bool>()) return {};
      return CompareSettings{vm["compare-every"].as<std::vector<int>>()};
    },
    [](const Options& o) -> std::string {
      if (!o.studies.asked<CompareSettings>()) return "";
      if (o.studies.asked<PoliciesSettings>())
        return "--compare and --compare-policies each print a table of their own: choose one";
      return one_model_problem(o, "--compare");
    },
    "\n--compare runs, back to back on one device with the same seed: batch, none, every=K for\n"
    "  each K in --compare-every, and 'bounded' (none with --max-pending-bytes, by default two\n"
    "  batches' footprint). --sync is ignored; --max-pending/--max-pending-bytes apply to the\n"
    "  bounded mode only. With --memory-log out/mem.csv it writes one log per mode:\n"
    "  out/mem.batch.csv, out/mem.none.csv, out/mem.every2.csv, out/mem.every10.csv,\n"
    "  out/mem.bounded.csv. --summary-json writes one object per mode.\n"}};
const RegisterStudyOptions compare_policies_options{{"compare-policies", 30,
    [](Declare& d) {
      d.flag("compare-policies",
        "run the allocation policies back to back, unsynchronized (--sync is ignored): --alloc enqueue, "
        "--alloc run, --alloc run --data-queue (CPU devices) and --alloc stream, and print one table: "
        "memory increase measured and predicted, samples/s, final loss (default: off)");
    },
    [](const po::variables_map& vm) -> std::any {
      if (!vm["compare-policies"].as<bool>()) return {};
      return PoliciesSettings{};
    },
    [](const Options& o) -> std::string {
      return o.studies.asked<PoliciesSettings>() ? one_model_problem(o, "--compare-policies") : "";
    }}};
// clang-format on

}  // namespace

}  // namespace amlp::train
