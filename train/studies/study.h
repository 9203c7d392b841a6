// study.h — what train_mlp studies, plugged into one runner. A study says
// which runs it needs and how it reports them; the driver calls the studies
// the options ask for and never branches on which they are. A study's file
// holds all of it: its options, their checks, its paragraph in --help and
// its settings, found by their type (train/options/study_options.h
// RegisterStudyOptions, study_settings.h), the runs it plans with the heading
// before each and what they take from earlier runs (RunSpec's hooks), the
// files they write, its tables and its summary's sections; one run's options
// (train/options/options.h), the runner (train/runs/run_plan.h) and the
// report (train/report/) know none of it.
//
//   Options resolved = o;
//   std::vector<std::unique_ptr<Study>> studies = studies_for(o);
//   for (auto& s : studies) s->settle(resolved, out);     // --host-work match, --sync auto
//   Study& main = *studies.back();
//   main.run(resolved, out, results);                      // one run, --compare, --sweep, ...
//   main.report(resolved, results, out);
//   main.write_summary(o.summary_json, results);
//
// Adding a study: its file (a class, its RegisterStudy below and its
// RegisterStudyOptions) and its docs (docs/cli.md, whose option table is
// regenerated from the declarations); train/studies/host_work_match.cpp is
// the smallest.
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
  // The runs it makes, in order; the default: the one run --sync asks for
  // (train/plan/plan.h plan_runs).
  virtual std::vector<RunSpec> plan(const Options& o) const;
  // The memory logs its runs will write (checked before anything runs:
  // train/plan/outputs.h); the default: those of plan(o).
  virtual std::vector<std::string> memory_logs(const Options& o) const;
  // Runs what the study needs, appending each result to `results` as it ends
  // (a failed run's partial result too, before RunFailed propagates). The
  // default runs plan(o).
  virtual void run(const Options& o, std::ostream& out, std::vector<RunResult>& results);
  // Prints what the runs showed: a summary, a table.
  virtual void report(const Options& o, const std::vector<RunResult>& results, std::ostream& out) const;
  // --summary-json: one object per run; a study may add sections.
  virtual void write_summary(const std::string& path, const std::vector<RunResult>& results) const;
};

// The studies the options ask for, in the order the runner calls them: the
// ones that settle options first (in rank order), last the one whose runs
// are made (of those that apply, the lowest rank).
std::vector<std::unique_ptr<Study>> studies_for(const Options& o);
// The memory logs the runs of `o` will write: the run-making study's.
std::vector<std::string> planned_memory_logs(const Options& o);

// A study's entry in the runner's list, made by a static RegisterStudy in the
// study's own file (beside its RegisterStudyOptions): adding a study touches
// that file and its docs, nothing else.
struct StudyEntry {
  const char* name;      // "sweep"
  bool settles = false;  // settles options for the others (run before them) instead of making the runs
  int rank = 0;          // order among settlers; among run-makers, the lowest that applies wins
  bool (*wanted)(const Options&) = nullptr;
  std::unique_ptr<Study> (*make)() = nullptr;
};
struct RegisterStudy {
  explicit RegisterStudy(const StudyEntry& e);
};
// Every registered study: the settlers, then the run-makers, each by rank.
std::vector<StudyEntry> registered_studies();
// The entries studies_for makes its studies from.
std::vector<StudyEntry> study_entries_for(const Options& o);

}  // namespace amlp::train
