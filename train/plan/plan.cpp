// plan.cpp — one run as the plan asks for it, and the one run --sync asks for (plan.h).
#include "train/plan/plan.h"

#include "train/plan/outputs.h"

namespace amlp::train {

RunSpec planned_run(const Options& o, const std::string& label, const std::string& tag) {
  RunSpec p{o, label, tag};
  if (!o.memory_log.empty()) p.options.memory_log = tagged_path(o.memory_log, tag);
  return p;
}

void add_graph_row(const Options& o, std::vector<RunSpec>& rows) {
  for (RunSpec& p : rows) p.options.graph = false;
  if (!o.graph) return;
  rows.push_back(planned_run(o, "graph", "graph"));
  Options& g = rows.back().options;
  g.sync = {SyncPolicy::Never, 0};
  g.max_pending_ops = 0;
  g.max_pending_bytes = 0;
  g.alloc = AllocPolicy::Enqueue;
  g.data_queue = false;
}

std::vector<RunSpec> plan_runs(const Options& o) {
  std::string label = to_string(o.sync);
  if (o.max_pending_ops || o.max_pending_bytes) label += " (bounded)";
  return {RunSpec{o, label, file_tag(o.sync)}};
}

std::vector<std::string> memory_logs(const std::vector<RunSpec>& plan) {
  std::vector<std::string> logs;
  for (const RunSpec& p : plan)
    if (!p.options.memory_log.empty()) logs.push_back(p.options.memory_log);
  return logs;
}

}  // namespace amlp::train
