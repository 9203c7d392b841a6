// run_figures.h — what a run reports, declared once: each figure of the
// summary JSON (its key, unit, one-line meaning and how it is read from the
// run's result), in the order the summary writes them, and how a run's
// figure prints in the summary (its row's Printed: the function that writes
// its line(s) and their place). The summary's run objects and the printed
// summary are built from these tables (summary_json.cpp, summary_lines),
// docs/cli.md's key table is checked against them
// (tests/train/report/test_summary_json.cpp, which prints the table to paste
// when they differ), and so is the keys' fixture. Adding a figure: its field
// where it is measured (run_result.h, filled in train/runs/), its row here,
// and, where the printed summary shows it, its line's function and place in
// that row (or its words in the line of the figure it is printed beside).
//
//   for (const RunFigure& f : run_figures()) if (f.present(r)) object[f.key] = f.value(r);
//   std::string doc = figures_markdown();  // docs/cli.md's table, as it must read
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "framework/json.h"
#include "train/plan/run_result.h"

namespace amlp::train {

// The printed summary's lines: each a label and its text.
using SummaryLines = std::vector<std::pair<std::string, std::string>>;

// The lines a figure leads in the printed summary, and where they come there
// (the summary's order, which is not the table's). Null `lines`: it prints
// none. `lines` adds a run's line(s), or none where the run has nothing to
// say there, whether or not the figure is written (`when`).
template <typename R>
struct Printed {
  int place = 0;
  void (*lines)(const R&, SummaryLines&) = nullptr;
};

// One figure of an R: a run (RunResult), one of its devices (DeviceResult),
// ranks (RankResult), epochs (EpochResult), or its step graphs' verdicts
// (StepGraphStats).
template <typename R>
struct Figure {
  const char* key;
  const char* unit;     // "s", "bytes", "samples/s", ...; "" for a label, a count or a flag
  const char* meaning;  // one line
  Json (*value)(const R&);
  Printed<R> printed{};              // a run's figures: its lines in the printed summary
  bool (*when)(const R&) = nullptr;  // written only when this says so (null: always)

  bool present(const R& r) const { return !when || when(r); }
};
using RunFigure = Figure<RunResult>;

// An R's object: every figure that is present, in order; an array of them;
// and a table's Markdown (key, unit, meaning), as docs/cli.md shows it.
template <typename R>
Json figures_object(const std::vector<Figure<R>>& figures, const R& r) {
  Json out = Json::object();
  for (const Figure<R>& f : figures)
    if (f.present(r)) out[f.key] = f.value(r);
  return out;
}
template <typename R>
Json figures_array(const std::vector<Figure<R>>& figures, const std::vector<R>& rs) {
  Json out = Json::array();
  for (const R& r : rs) out.push_back(figures_object(figures, r));
  return out;
}
template <typename R>
std::string figures_table(const std::vector<Figure<R>>& figures) {
  std::string out = "| key | unit | meaning |\n|---|---|---|\n";
  for (const Figure<R>& f : figures)
    out += "| `" + std::string(f.key) + "` | " + f.unit + " | " + f.meaning + " |\n";
  return out;
}

const std::vector<RunFigure>& run_figures();
const std::vector<Figure<DeviceResult>>& device_figures();
const std::vector<Figure<RankResult>>& rank_figures();
const std::vector<Figure<EpochResult>>& epoch_figures();
const std::vector<Figure<StepGraphStats>>& graph_figures();

// One run's summary object: every figure that is present, in order.
Json run_json(const RunResult& r);

// docs/cli.md's table of the keys: a Markdown table per table above.
std::string figures_markdown();

// The printed summary's lines, in order: each a label and its text, from the
// run figures that print (their Printed, in its places' order; a run prints
// only the lines that apply to it: "graph" with --graph on, ...).
SummaryLines summary_lines(const RunResult& r);

}  // namespace amlp::train
