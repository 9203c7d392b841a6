#include "train/outputs.h"
#include "train/report.h"
#include "train/run_plan.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <sstream>

#include "framework/parse.h"
#include "train/distributed_run.h"
#include "train/experiment.h"
#include "train/interrupt.h"
#include "train/study.h"
#include "train/sweep.h"

namespace amlp::train {

PlanKind plan_kind(const Options& o) {
  return o.compare ? PlanKind::Compare : o.compare_policies ? PlanKind::Policies : PlanKind::Single;
}

std::vector<PlannedRun> plan_runs(const Options& o) {
  const auto planned = [&](PlanKind kind, const std::string& label, const std::string& tag) {
    PlannedRun p;
    p.kind = kind;
    p.spec = RunSpec{o, label};
    p.tag = tag;
    if (kind != PlanKind::Single && !o.memory_log.empty()) p.spec.memory_log = tagged_path(o.memory_log, tag);
    return p;
  };
  std::vector<PlannedRun> plan;
  // With --graph on, a comparison's rows run without step graphs and one more
  // row, "graph", runs unsynchronized and unbounded with them.
  const auto add_graph_row = [&](std::vector<PlannedRun>& rows, PlanKind kind) {
    for (PlannedRun& p : rows) p.spec.graph = false;
    if (!o.graph) return;
    rows.push_back(planned(kind, "graph", "graph"));
    rows.back().spec.sync = {SyncPolicy::Never, 0};
    rows.back().spec.max_pending_ops = 0;
    rows.back().spec.max_pending_bytes = 0;
    rows.back().spec.alloc = AllocPolicy::Enqueue;
    rows.back().spec.data_queue = false;
    rows.back().like = "CUDA graphs, one launch a batch";
  };
  switch (plan_kind(o)) {
    case PlanKind::Single: {
      std::string label = to_string(o.sync);
      if (o.max_pending_ops || o.max_pending_bytes) label += " (bounded)";
      plan.push_back(planned(PlanKind::Single, label, file_tag(o.sync)));
      break;
    }
    case PlanKind::Compare: {
      // --sync is ignored; back-pressure applies to the bounded run only.
      std::vector<SyncMode> syncs{{SyncPolicy::EveryBatch, 1}, {SyncPolicy::Never, 0}};
      for (int k : o.compare_every) syncs.push_back({SyncPolicy::EveryK, k});
      for (const SyncMode& m : syncs) {
        plan.push_back(planned(PlanKind::Compare, to_string(m), file_tag(m)));
        plan.back().spec.sync = m;
        plan.back().spec.max_pending_ops = 0;
        plan.back().spec.max_pending_bytes = 0;
      }
      plan.push_back(planned(PlanKind::Compare, "bounded", "bounded"));
      plan.back().spec.sync = {SyncPolicy::Never, 0};
      plan.back().bound_from_earlier = o.max_pending_bytes == 0;
      add_graph_row(plan, PlanKind::Compare);
      break;
    }
    case PlanKind::Policies: {
      // On a GPU a block is reused as soon as its last op is launched (the
      // stream orders the rest): allocating at launch as well is what
      // PyTorch's caching allocator does, with no queue in front of the stream.
      const bool cuda = run_devices(o).front().is_cuda();
      struct Policy {
        AllocPolicy alloc;
        bool data_queue;
        const char* tag;
        const char* like;
      };
      std::vector<Policy> policies{
          {AllocPolicy::Enqueue, false, "enqueue", "queued ops own their outputs"},
          {AllocPolicy::Run, false, "run", cuda ? "PyTorch's caching allocator" : "MXNet's engine, delayed alloc"}};
      if (!cuda) policies.push_back({AllocPolicy::Run, true, "run+data", "MXNet, data ops running ahead"});
      for (const Policy& p : policies) {
        plan.push_back(planned(PlanKind::Policies, p.tag, p.tag));
        plan.back().spec.sync = {SyncPolicy::Never, 0};
        plan.back().spec.alloc = p.alloc;
        plan.back().spec.data_queue = p.data_queue;
        plan.back().like = p.like;
      }
      add_graph_row(plan, PlanKind::Policies);
      break;
    }
  }
  return plan;
}

namespace {

// "\n== none ==", "\n== bounded (none, max-pending-bytes 7.6 MB) ==",
// "\n== run (--sync none --alloc run) ==": the heading of a comparison's run.
std::string heading(const PlannedRun& p) {
  const RunSpec& s = p.spec;
  std::string h = "\n== " + s.label;
  if (p.kind == PlanKind::Policies)
    h += std::string(" (--sync none --alloc ") + to_string(s.alloc) + (s.data_queue ? " --data-queue" : "") +
         (s.graph ? " --graph on" : "") + ")";
  else if (s.graph)
    h += " (none, --graph on)";
  else if (s.max_pending_bytes)
    h += " (none, max-pending-bytes " + format_mb(double(s.max_pending_bytes)) + ")";
  return h + " ==";
}

}  // namespace

void run_plan(const std::vector<PlannedRun>& plan, std::ostream& out, std::vector<RunResult>& results) {
  for (const PlannedRun& p : plan) {
    // The interrupted run was the last; across processes every rank decides alike.
    dist::ProcessGroup* g = rank_group(p.spec);
    if (g ? any_rank(*g, interrupt_signal() != 0) : interrupt_signal() != 0) {
      note_interrupt(SIGINT);  // another rank's, when this one had none
      break;
    }
    RunSpec s = p.spec;
    if (p.bound_from_earlier) {
      size_t bpb = 0;
      for (const RunResult& r : results) bpb = std::max(bpb, r.bytes_per_batch);
      s.max_pending_bytes = 2 * bpb;
      if (dist::ProcessGroup* g = rank_group(s))  // every rank bounded alike
        s.max_pending_bytes = static_cast<size_t>(rank0_value(*g, int64_t(s.max_pending_bytes)));
    }
    if (p.kind != PlanKind::Single) out << heading(PlannedRun{p.kind, s, p.tag, p.like, false}) << std::endl;
    try {
      results.push_back(run_experiment(s, out));
    } catch (const RunFailed& e) {
      results.push_back(e.partial);
      throw;
    }
  }
  if (!plan.empty())
    for (const Device& dev : run_devices(plan.front().spec)) fresh_device(dev);
}

RunResult measure_synchronized(const RunSettings& settings, int batches, const HostWork& w, bool warm_up) {
  RunSpec c{settings, "calibration"};
  c.sync = SyncMode{SyncPolicy::EveryBatch, 1};
  c.batches = std::max(1, std::min(batches, settings.batches));
  c.host_work = w;
  c.max_pending_ops = 0;
  c.max_pending_bytes = 0;
  c.memory_log.clear();
  c.quiet = true;
  std::ostringstream quiet;  // its lines are not the run's
  if (warm_up) {
    RunSpec warm = c;  // the first batches pay for cold caches and threads starting: not measured
    warm.batches = std::min(3, settings.batches);
    run_experiment(warm, quiet);
  }
  return run_experiment(c, quiet);
}

HostWork resolve_host_work(const RunSettings& settings, std::ostream& out) {
  HostWork w = settings.host_work;
  if (!w.match_device) return w;
  constexpr int kBatches = 8;
  const RunResult r = measure_synchronized(settings, kBatches);
  w.ns = std::max<int64_t>(1000, static_cast<int64_t>(r.device_s_per_batch * 1e9));
  if (dist::ProcessGroup* g = rank_group(settings)) w.ns = rank0_value(*g, w.ns);  // every rank works alike
  w.match_device = false;
  char line[160];
  std::snprintf(line, sizeof line,
                "host work: %.3f ms per batch (%s), the device's time per batch over %d synchronized batches",
                w.ns / 1e6, to_string(w.kind).c_str(), r.spec.batches);
  out << line << std::endl;
  return w;
}

// --- the studies whose runs plan_runs lists, and --host-work match -----------------

namespace {

struct SingleRun : Study {};  // the defaults: the plan's one run, its summary

struct Compare : Study {
  void report(const Options&, const std::vector<RunResult>& results, std::ostream& out) const override {
    print_compare_table(results, out);
  }
};

struct ComparePolicies : Study {
  void report(const Options& o, const std::vector<RunResult>& results, std::ostream& out) const override {
    print_policy_table(o, results, out);
  }
};

// Measured once, before the runs, for every mode.
struct HostWorkMatch : Study {
  void settle(Options& o, std::ostream& out) const override { o.host_work = resolve_host_work(o, out); }
};

}  // namespace

std::unique_ptr<Study> single_run_study() { return std::make_unique<SingleRun>(); }
std::unique_ptr<Study> compare_study() { return std::make_unique<Compare>(); }
std::unique_ptr<Study> compare_policies_study() { return std::make_unique<ComparePolicies>(); }
std::unique_ptr<Study> host_work_match_study() { return std::make_unique<HostWorkMatch>(); }

}  // namespace amlp::train
