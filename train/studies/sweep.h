// sweep.h — train_mlp --sweep: where a loop sits on the trade between memory
// and throughput. d, the device's time per batch, is measured first over
// synchronized batches; then for each fraction f of --sweep-fractions the
// frontend's time per batch h is set to f·d (host work calibrated until the
// measured h matches) and every mode of --compare runs at it. Each (f, mode)
// is a row beside both models' predictions (train/predict/predict.h), and each mode a
// curve over h/d drawn from the same functions.
//
//   std::vector<RunResult> runs;
//   SweepResult s;
//   run_sweep(options, std::cout, runs, s);                // runs: every run, in order
//   print_sweep_table(s, std::cout);
//   write_summary_json(path, runs, &s);                    // {"runs": [...], "sweep": [...], "curves": [...]}
#pragma once
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "train/plan/run_result.h"
#include "train/report/run_figures.h"

namespace amlp::train {

// --sweep: on; --sweep-fractions, and --compare-every (the modes of --compare it runs).
struct SweepSettings {
  static constexpr const char* kStudy = "sweep";  // its options' entry (study_options.h)
  std::vector<double> fractions{0, 0.25, 0.5, 0.75, 1, 1.5};
  std::vector<int> compare_every{2, 10};
};
// --sweep-fractions' value: "0,0.25,1.5", each in [0, 10], none twice; throws
// amlp::ParseError naming what it must be.
std::vector<double> parse_sweep_fractions(const std::string& text);

// One run of the sweep, measured and predicted.
struct SweepRow {
  double fraction = 0;        // f: the h/d asked for
  std::string mode;           // "batch", "none", "every=2", "bounded"
  size_t run = 0;             // its index in the runs
  int64_t host_work_ns = 0;   // the host work requested, calibrated so the measured h is f·d
  double target_h_s = 0;      // f·d
  double h_s = 0, d_s = 0;    // measured in this run
  double wall_s = 0, predicted_wall_s = 0;  // the run's own (the summary's 'predicted wall')
  double samples_per_s = 0, predicted_samples_per_s = 0;
  double speedup = 0, predicted_speedup = 0;  // over batch at this fraction (predicted: batch's predicted wall / this one's)
  int peak_backlog = 0, predicted_backlog = 0;  // predicted from the run's h and d (predict.h predicted_backlog)
  size_t mem_increase_bytes = 0;
  size_t predicted_increase_bytes = 0;  // the summary's: peak backlog x bytes per batch (capped when bounded)
  size_t model_increase_bytes = 0;      // from h and d alone: predicted backlog x bytes per batch (capped)
};

// A mode's predictions over x = h/d at the sweep's d, without fresh memory.
struct SweepCurvePoint {
  double x = 0;
  double speedup = 0;
  int backlog = 0;
  size_t increase_bytes = 0;
};
struct SweepCurve {
  std::string mode;
  int every = 1;  // the model's K
  std::vector<SweepCurvePoint> points;
};

struct SweepResult {
  double device_s = 0;        // d, over synchronized batches
  double queue_host_s = 0;    // h with no host work: queueing a batch
  int calibration_batches = 0;
  int batches = 0, batch_size = 0;
  int epochs = 1;  // with --epochs E > 1 each cell is its run's last epoch: warm, the pool's blocks reused
  size_t bytes_per_batch = 0, max_pending_bytes = 0, largest_tensor_bytes = 0;  // the curves' memory terms
  std::vector<SweepRow> rows;
  std::vector<SweepCurve> curves;
};

// --summary-json's "sweep" (a row per fraction and mode) and "sweep_model"
// (the curves), declared once as run_figures.h's tables are: each key, its
// unit, meaning and how it is read. The sections are built from these
// tables, and docs/cli.md's tables of their keys are sweep_markdown()'s
// (tests/train/studies/test_sweep.cpp, which prints them to paste when they
// differ). A row is read beside its sweep (x: its h over the sweep's d).
struct SweepRowOf {
  const SweepResult& sweep;
  const SweepRow& row;
};
const std::vector<Figure<SweepRowOf>>& sweep_row_figures();
const std::vector<Figure<SweepResult>>& sweep_model_figures();
const std::vector<Figure<SweepCurve>>& sweep_curve_figures();
const std::vector<Figure<SweepCurvePoint>>& sweep_point_figures();
Json sweep_rows_json(const SweepResult& s);
Json sweep_model_json(const SweepResult& s);
// docs/cli.md's tables of those keys, a Markdown table per table above.
std::string sweep_markdown();

// Runs the sweep into `s`, appending every run to `runs` (a failed run's
// partial result and its row too, before RunFailed propagates); stops after
// an interrupted run. Its calibration lines go to `out`.
void run_sweep(const Options& o, std::ostream& out, std::vector<RunResult>& runs, SweepResult& s);

// The host work a frontend must request to spend `target_s` in it: sleeps and
// spins overshoot what they are asked for, so a few are timed and the
// overshoot taken off. 0 for a target of 0.
int64_t calibrated_host_work_ns(HostWorkKind kind, double target_s);

// The sweep's rows and curves from its runs (results[i] is rows' run i): the
// predictions, speed-ups and curves, from train/predict/predict.h.
void fill_predictions(SweepResult& s, const std::vector<RunResult>& runs);


void print_sweep_table(const SweepResult& s, std::ostream& out);

}  // namespace amlp::train
