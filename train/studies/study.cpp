#include "train/studies/study.h"

#include <algorithm>
#include <tuple>

#include "train/report/report.h"

#include "train/runs/experiment.h"
#include "train/plan/plan.h"
#include "train/runs/run_plan.h"
#include "train/report/summary_json.h"

namespace amlp::train {

void Study::settle(Options&, std::ostream&) const {}

std::vector<RunSpec> Study::plan(const Options& o) const { return plan_runs(o); }

std::vector<std::string> Study::memory_logs(const Options& o) const { return train::memory_logs(plan(o)); }

void Study::run(const Options& o, std::ostream& out, std::vector<RunResult>& results) {
  run_plan(plan(o), out, results);
}

void Study::report(const Options&, const std::vector<RunResult>& results, std::ostream& out) const {
  print_summary(results.back(), out);
}

void Study::write_summary(const std::string& path, const std::vector<RunResult>& results) const {
  write_summary_json(path, results);
}

namespace {
// A function-local static: filled by the studies' static RegisterStudy
// objects, whatever order their files' initialisers run in.
std::vector<StudyEntry>& registry() {
  static std::vector<StudyEntry> r;
  return r;
}
}  // namespace

RegisterStudy::RegisterStudy(const StudyEntry& e) {
  auto& r = registry();
  r.insert(std::upper_bound(r.begin(), r.end(), e,
                            [](const StudyEntry& a, const StudyEntry& b) {
                              return std::make_tuple(!a.settles, a.rank) < std::make_tuple(!b.settles, b.rank);
                            }),
           e);
}

std::vector<StudyEntry> registered_studies() { return registry(); }

std::vector<StudyEntry> study_entries_for(const Options& o) {
  std::vector<StudyEntry> s;
  for (const StudyEntry& e : registry())  // settlers first, each by rank
    if (e.settles && e.wanted(o)) s.push_back(e);
  for (const StudyEntry& e : registry())  // then the first run-maker that applies
    if (!e.settles && e.wanted(o)) {
      s.push_back(e);
      return s;
    }
  throw Error("no study makes the runs these options ask for (the single run's is not linked in)");
}

std::vector<std::unique_ptr<Study>> studies_for(const Options& o) {
  std::vector<std::unique_ptr<Study>> s;
  for (const StudyEntry& e : study_entries_for(o)) s.push_back(e.make());
  return s;
}

std::vector<std::string> planned_memory_logs(const Options& o) { return studies_for(o).back()->memory_logs(o); }

}  // namespace amlp::train
