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
const RegisterStudy compare{{"compare", false, 20, [](const Options& o) { return o.compare; },
                             [] { return std::unique_ptr<Study>(std::make_unique<Compare>()); }}};
const RegisterStudy compare_policies{{"compare-policies", false, 30, [](const Options& o) { return o.compare_policies; },
                                      [] { return std::unique_ptr<Study>(std::make_unique<ComparePolicies>()); }}};
// Measured once, before any other study's runs (and before --sync auto's measurement).
const RegisterStudy host_work_match{{"host-work match", true, 10, [](const Options& o) { return o.host_work.match_device; },
                                     [] { return std::unique_ptr<Study>(std::make_unique<HostWorkMatch>()); }}};

}  // namespace

}  // namespace amlp::train
