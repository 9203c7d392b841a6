// plan.cpp — the runs the options ask for (plan.h).
#include "train/plan/plan.h"

#include "train/plan/outputs.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <sstream>

#include "framework/parse.h"

namespace amlp::train {

PlanKind plan_kind(const Options& o) {
  return o.compare ? PlanKind::Compare : o.compare_policies ? PlanKind::Policies : PlanKind::Single;
}

std::vector<RunSpec> plan_runs(const Options& o) {
  const auto planned = [&](PlanKind kind, const std::string& label, const std::string& tag) {
    RunSpec p{o, label};
    p.kind = kind;
    p.tag = tag;
    if (kind != PlanKind::Single && !o.memory_log.empty()) p.memory_log = tagged_path(o.memory_log, tag);
    return p;
  };
  std::vector<RunSpec> plan;
  // With --graph on, a comparison's rows run without step graphs and one more
  // row, "graph", runs unsynchronized and unbounded with them.
  const auto add_graph_row = [&](std::vector<RunSpec>& rows, PlanKind kind) {
    for (RunSpec& p : rows) p.graph = false;
    if (!o.graph) return;
    rows.push_back(planned(kind, "graph", "graph"));
    rows.back().sync = {SyncPolicy::Never, 0};
    rows.back().max_pending_ops = 0;
    rows.back().max_pending_bytes = 0;
    rows.back().alloc = AllocPolicy::Enqueue;
    rows.back().data_queue = false;
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
        plan.back().sync = m;
        plan.back().max_pending_ops = 0;
        plan.back().max_pending_bytes = 0;
      }
      plan.push_back(planned(PlanKind::Compare, "bounded", "bounded"));
      plan.back().sync = {SyncPolicy::Never, 0};
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
        plan.back().sync = {SyncPolicy::Never, 0};
        plan.back().alloc = p.alloc;
        plan.back().data_queue = p.data_queue;
        plan.back().like = p.like;
      }
      add_graph_row(plan, PlanKind::Policies);
      break;
    }
  }
  return plan;
}

}  // namespace amlp::train
