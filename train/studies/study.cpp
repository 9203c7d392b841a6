#include "train/studies/study.h"

#include "train/report/report.h"

#include "train/runs/experiment.h"
#include "train/plan/plan.h"
#include "train/runs/run_plan.h"
#include "train/report/summary_json.h"

namespace amlp::train {

void Study::settle(Options&, std::ostream&) const {}

void Study::run(const Options& o, std::ostream& out, std::vector<RunResult>& results) {
  run_plan(plan_runs(o), out, results);
}

void Study::report(const Options&, const std::vector<RunResult>& results, std::ostream& out) const {
  print_summary(results.back(), out);
}

void Study::write_summary(const std::string& path, const std::vector<RunResult>& results) const {
  write_summary_json(path, results);
}

std::vector<std::unique_ptr<Study>> studies_for(const Options& o) {
  std::vector<std::unique_ptr<Study>> s;
  if (o.host_work.match_device) s.push_back(host_work_match_study());
  if (o.sync_auto) s.push_back(sync_auto_study());
  s.push_back(o.sweep              ? sweep_study()
              : o.compare          ? compare_study()
              : o.compare_policies ? compare_policies_study()
                                   : single_run_study());
  return s;
}

}  // namespace amlp::train
