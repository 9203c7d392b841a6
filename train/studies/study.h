// study.h — what train_mlp studies, plugged into one runner. A study says
// which runs it needs and how it reports them; the driver calls the studies
// the options ask for and never branches on which they are. The options stage
// (train/options/options.h) parses and checks every study's options: a study holds
// none of its own.
//
//   Options resolved = o;
//   std::vector<std::unique_ptr<Study>> studies = studies_for(o);
//   for (auto& s : studies) s->settle(resolved, out);     // --host-work match, --sync auto
//   Study& main = *studies.back();
//   main.run(resolved, out, results);                      // one run, --compare, --sweep, ...
//   main.report(resolved, results, out);
//   main.write_summary(o.summary_json, results);
//
// Adding a study: its file (a class and its factory, declared below), one
// line in studies_for (train/studies/study.cpp), one line in the option table
// (train/options/options.cpp) and its docs.
#pragma once
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "train/options/options.h"
#include "train/plan/run_result.h"

namespace amlp::train {

class Study {
 public:
  virtual ~Study() = default;
  // Settles the options the runs take, measuring first where the study
  // needs to (--host-work match, --sync auto); most take them as they are.
  virtual void settle(Options& o, std::ostream& out) const;
  // Runs what the study needs, appending each result to `results` as it ends
  // (a failed run's partial result too, before RunFailed propagates). The
  // default runs plan_runs(o) (train/plan/plan.h).
  virtual void run(const Options& o, std::ostream& out, std::vector<RunResult>& results);
  // Prints what the runs showed: a summary, a table.
  virtual void report(const Options& o, const std::vector<RunResult>& results, std::ostream& out) const;
  // --summary-json: one object per run; a study may add sections.
  virtual void write_summary(const std::string& path, const std::vector<RunResult>& results) const;
};

// The studies the options ask for, in the order the runner calls them: the
// ones that settle options first, last the one whose runs are made.
std::vector<std::unique_ptr<Study>> studies_for(const Options& o);

// The studies, each in its own file.
std::unique_ptr<Study> single_run_study();        // train/studies/comparisons.cpp: the run --sync asks for
std::unique_ptr<Study> compare_study();           // train/studies/comparisons.cpp: --compare
std::unique_ptr<Study> compare_policies_study();  // train/studies/comparisons.cpp: --compare-policies
std::unique_ptr<Study> host_work_match_study();   // train/studies/comparisons.cpp: --host-work match
std::unique_ptr<Study> sync_auto_study();         // train/studies/sync_auto.cpp: --sync auto
std::unique_ptr<Study> sweep_study();             // train/studies/sweep.cpp: --sweep

}  // namespace amlp::train
