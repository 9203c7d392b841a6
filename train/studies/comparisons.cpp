// comparisons.cpp — the studies whose runs are modes back to back (--compare,
// --compare-policies), the one run --sync asks for, and --host-work match
// (comparisons.h, study.h).
#include "train/studies/comparisons.h"

#include <algorithm>
#include <memory>
#include <ostream>

#include "framework/parse.h"
#include "train/plan/plan.h"
#include "train/report/report.h"
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

std::vector<RunSpec> compare_plan(const Options& o, const std::vector<int>& every) {
  std::vector<RunSpec> plan;
  std::vector<SyncMode> syncs{{SyncPolicy::EveryBatch, 1}, {SyncPolicy::Never, 0}};
  for (int k : every) syncs.push_back({SyncPolicy::EveryK, k});
  for (const SyncMode& m : syncs) {
    plan.push_back(planned_run(o, PlanKind::Compare, to_string(m), file_tag(m)));
    plan.back().options.sync = m;
    plan.back().options.max_pending_ops = 0;
    plan.back().options.max_pending_bytes = 0;
  }
  plan.push_back(planned_run(o, PlanKind::Compare, "bounded", "bounded"));
  plan.back().options.sync = {SyncPolicy::Never, 0};
  plan.back().bound_from_earlier = o.max_pending_bytes == 0;
  add_graph_row(o, plan, PlanKind::Compare);
  return plan;
}

std::string one_model_problem(const Options& o, const char* study) {
  if (o.save.empty()) return "";
  return std::string("--save keeps one run's parameters: not with ") + study +
         ", which trains a model per mode (use --load to start them all from one file)";
}

namespace {

struct SingleRun : Study {};  // the defaults: the plan's one run, its summary

struct Compare : Study {
  std::vector<RunSpec> plan(const Options& o) const override {
    return compare_plan(o, o.studies.find<CompareSettings>("compare")->every);
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
  std::vector<RunSpec> plan(const Options& o) const override {
    const bool cuda = run_devices(o).front().is_cuda();
    struct Policy {
      AllocPolicy alloc;
      bool data_queue;
      const char* tag;
      const char* like;
    };
    std::vector<Policy> policies{
        {AllocPolicy::Enqueue, false, "enqueue", "queued ops own their outputs"},
        {AllocPolicy::Run, false, "run", cuda ? "allocated at launch" : "MXNet's engine, delayed alloc"}};
    if (!cuda) policies.push_back({AllocPolicy::Run, true, "run+data", "MXNet, data ops running ahead"});
    policies.push_back({AllocPolicy::Stream, false, "stream", "PyTorch's caching allocator"});
    std::vector<RunSpec> plan;
    for (const Policy& p : policies) {
      plan.push_back(planned_run(o, PlanKind::Policies, p.tag, p.tag));
      plan.back().options.sync = {SyncPolicy::Never, 0};
      plan.back().options.alloc = p.alloc;
      plan.back().options.data_queue = p.data_queue;
      plan.back().like = p.like;
    }
    add_graph_row(o, plan, PlanKind::Policies);
    return plan;
  }
  void report(const Options&, const std::vector<RunResult>& results, std::ostream& out) const override {
    print_policy_table(results, out);
  }
};

// Measured once, before the runs, for every mode.
struct HostWorkMatch : Study {
  void settle(Options& o, std::ostream& out) const override { o.host_work = resolve_host_work(o, out); }
};

// The run --sync asks for when no other study makes the runs: the last resort.
const RegisterStudy single_run{{"single run", false, 1000, [](const Options&) { return true; },
                                [] { return std::unique_ptr<Study>(std::make_unique<SingleRun>()); }}};
const RegisterStudy compare{{"compare", false, 20, [](const Options& o) { return o.studies.asked("compare"); },
                             [] { return std::unique_ptr<Study>(std::make_unique<Compare>()); }}};
const RegisterStudy compare_policies{{"compare-policies", false, 30,
                                      [](const Options& o) { return o.studies.asked("compare-policies"); },
                                      [] { return std::unique_ptr<Study>(std::make_unique<ComparePolicies>()); }}};
// Measured once, before any other study's runs (and before --sync auto's measurement).
const RegisterStudy host_work_match{{"host-work match", true, 10, [](const Options& o) { return o.host_work.match_device; },
                                     [] { return std::unique_ptr<Study>(std::make_unique<HostWorkMatch>()); }}};

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
      if (!o.studies.asked("compare")) return "";
      if (o.studies.asked("compare-policies"))
        return "--compare and --compare-policies each print a table of their own: choose one";
      return one_model_problem(o, "--compare");
    }}};
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
      return o.studies.asked("compare-policies") ? one_model_problem(o, "--compare-policies") : "";
    }}};
// clang-format on

}  // namespace

}  // namespace amlp::train
