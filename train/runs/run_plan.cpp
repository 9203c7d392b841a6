// run_plan.cpp — running the planned runs (run_plan.h).
#include "train/runs/run_plan.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "framework/parse.h"
#include "train/runs/distributed_run.h"
#include "train/runs/experiment.h"
#include "train/runs/interrupt.h"

namespace amlp::train {

namespace {

// "\n== none ==", "\n== bounded (none, max-pending-bytes 7.6 MB) ==",
// "\n== run (--sync none --alloc run) ==": the heading of a comparison's run.
std::string heading(const RunSpec& p) {
  const Options& o = p.options;
  std::string h = "\n== " + p.label;
  if (p.kind == PlanKind::Policies)
    h += std::string(" (--sync none --alloc ") + to_string(o.alloc) + (o.data_queue ? " --data-queue" : "") +
         (o.graph ? " --graph on" : "") + ")";
  else if (o.graph)
    h += " (none, --graph on)";
  else if (o.max_pending_bytes)
    h += " (none, max-pending-bytes " + format_mb(double(o.max_pending_bytes)) + ")";
  return h + " ==";
}

}  // namespace

void run_plan(const std::vector<RunSpec>& plan, std::ostream& out, std::vector<RunResult>& results) {
  for (const RunSpec& p : plan) {
    // The interrupted run was the last; across processes every rank decides alike.
    dist::ProcessGroup* g = rank_group(p.options);
    if (g ? any_rank(*g, interrupt_signal() != 0) : interrupt_signal() != 0) {
      note_interrupt(SIGINT);  // another rank's, when this one had none
      break;
    }
    RunSpec s = p;
    if (p.bound_from_earlier) {
      size_t bpb = 0;
      for (const RunResult& r : results) bpb = std::max(bpb, r.measured.bytes_per_batch);
      s.options.max_pending_bytes = 2 * bpb;
      if (dist::ProcessGroup* g = rank_group(s.options))  // every rank bounded alike
        s.options.max_pending_bytes = static_cast<size_t>(rank0_value(*g, int64_t(s.options.max_pending_bytes)));
    }
    if (p.kind != PlanKind::Single) out << heading(s) << std::endl;
    try {
      results.push_back(run_experiment(s, out));
    } catch (const RunFailed& e) {
      results.push_back(e.partial);
      throw;
    }
  }
  if (!plan.empty())
    for (const Device& dev : run_devices(plan.front().options)) fresh_device(dev);
}

RunResult measure_synchronized(const Options& settings, int batches, const HostWork& w, bool warm_up) {
  RunSpec c{settings, "calibration"};
  Options& o = c.options;
  o.sync = SyncMode{SyncPolicy::EveryBatch, 1};
  o.batches = std::max(1, std::min(batches, settings.batches));
  o.host_work = w;
  o.max_pending_ops = 0;
  o.max_pending_bytes = 0;
  o.memory_log.clear();
  o.save.clear();  // a calibration keeps nothing
  o.epochs = 1;    // one pass of its few batches
  o.quiet = true;
  std::ostringstream quiet;  // its lines are not the run's
  if (warm_up) {
    RunSpec warm = c;  // the first batches pay for cold caches and threads starting: not measured
    warm.options.batches = std::min(3, settings.batches);
    run_experiment(warm, quiet);
  }
  return run_experiment(c, quiet);
}

HostWork resolve_host_work(const Options& settings, std::ostream& out) {
  HostWork w = settings.host_work;
  if (!w.match_device) return w;
  constexpr int kBatches = 8;
  const RunResult r = measure_synchronized(settings, kBatches);
  w.ns = std::max<int64_t>(1000, static_cast<int64_t>(r.measured.device_s_per_batch * 1e9));
  if (dist::ProcessGroup* g = rank_group(settings)) w.ns = rank0_value(*g, w.ns);  // every rank works alike
  w.match_device = false;
  char line[160];
  std::snprintf(line, sizeof line,
                "host work: %.3f ms per batch (%s), the device's time per batch over %d synchronized batches",
                w.ns / 1e6, to_string(w.kind).c_str(), r.asked.options.batches);
  out << line << std::endl;
  return w;
}

}  // namespace amlp::train
