// comparisons.cpp — the studies whose runs plan_runs lists (one run,
// --compare, --compare-policies) and --host-work match (study.h).
#include <memory>
#include <ostream>

#include "train/plan/plan.h"
#include "train/report/report.h"
#include "train/runs/run_plan.h"
#include "train/studies/study.h"

namespace amlp::train {

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
