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

void run_plan(const std::vector<RunSpec>& plan, std::ostream& out, std::vector<RunResult>& results) {
  for (const RunSpec& p : plan) {
    // The interrupted run was the last; across processes every rank decides alike.
    dist::ProcessGroup* g = rank_group(p.options);
    if (g ? any_rank(*g, interrupt_signal() != 0) : interrupt_signal() != 0) {
      note_interrupt(SIGINT);  // another rank's, when this one had none
      break;
    }
    RunSpec s = p;
    if (p.from_earlier) p.from_earlier(s.options, results);
    if (p.heading) out << p.heading(s) << std::endl;
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
