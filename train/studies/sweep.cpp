#include "train/studies/sweep.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "framework/json.h"
#include "framework/parse.h"
#include "train/runs/distributed_run.h"
#include "train/runs/experiment.h"
#include "train/options/host_work.h"
#include "train/runs/interrupt.h"
#include "train/predict/predict.h"
#include "train/plan/plan.h"
#include "train/plan/outputs.h"
#include "train/runs/run_plan.h"
#include "train/studies/comparisons.h"
#include "train/options/study_options.h"
#include "train/studies/study.h"
#include "train/report/summary_json.h"

namespace amlp::train {

std::vector<double> parse_sweep_fractions(const std::string& t) {
  constexpr double kMaxFraction = 10;
  const std::string must = "must be a comma-separated list of fractions of d in [0, 10] (got " + quote(t) + ")";
  std::vector<double> out;
  for (std::string_view item : split_list(t)) {
    if (item.empty()) throw ParseError("", must);
    const double f = parse_float(item, "");
    if (!(f >= 0 && f <= kMaxFraction)) throw ParseError("", must);
    if (std::find(out.begin(), out.end(), f) != out.end())
      throw ParseError("", "names " + std::string(item) + " twice (got " + quote(t) + ")");
    out.push_back(f);
  }
  return out;
}

namespace {

constexpr int kDeviceBatches = 16;  // the synchronized batches d is measured over,
constexpr int kDeviceRepeats = 3;   // this many times (the quickest counts)
constexpr int kHostBatches = 16;     // the synchronized batches a fraction's h is checked over
constexpr int kCurvePoints = 61;

int64_t same_on_every_rank(const Options& o, int64_t v) {
  if (dist::ProcessGroup* g = rank_group(o)) return rank0_value(*g, v);
  return v;
}

bool interrupted(const Options& o) {
  dist::ProcessGroup* g = rank_group(o);
  return g ? any_rank(*g, interrupt_signal() != 0) : interrupt_signal() != 0;
}

double ratio(double measured, double predicted) { return predicted > 0 ? measured / predicted : 0.0; }

// The enqueue model's bytes for `backlog` batches alive, summed over the run's devices.
size_t increase_for(const RunResult& r, int backlog) {
  size_t p = 0;
  for (const DeviceResult& d : r.measured.per_device)
    p += backlog_increase(backlog, d.bytes_per_batch, r.asked.options.max_pending_bytes,
                          r.measured.largest_tensor_bytes);
  return p;
}

}  // namespace

int64_t calibrated_host_work_ns(HostWorkKind kind, double target_s) {
  if (!(target_s > 0)) return 0;
  const int64_t target = std::llround(target_s * 1e9);
  const int reps = std::clamp(static_cast<int>(0.02 / target_s), 3, 20);  // about 20 ms of it
  int64_t request = target;
  for (int round = 0; round < 2; ++round) {
    std::vector<int64_t> took;
    for (int i = 0; i < reps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      do_host_work(HostWork{request, kind, false});
      took.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
    }
    std::nth_element(took.begin(), took.begin() + reps / 2, took.end());
    request = std::max<int64_t>(1000, request + target - took[reps / 2]);
  }
  return request;
}

void run_sweep(const Options& o, std::ostream& out, std::vector<RunResult>& runs, SweepResult& s) {
  s = SweepResult{};
  // The quickest of a few measurements: a stall on a busy machine only lengthens one.
  RunResult cal = measure_synchronized(o, kDeviceBatches);
  for (int i = 1; i < kDeviceRepeats; ++i) {
    RunResult again = measure_synchronized(o, kDeviceBatches);
    if (again.measured.device_s_per_batch < cal.measured.device_s_per_batch) cal = std::move(again);
  }
  // Every rank sweeps the same fractions of rank 0's d.
  s.device_s = double(same_on_every_rank(o, std::llround(cal.measured.device_s_per_batch * 1e9))) * 1e-9;
  s.queue_host_s = double(same_on_every_rank(o, std::llround(cal.measured.host_s_per_batch * 1e9))) * 1e-9;
  s.calibration_batches = cal.asked.options.batches;
  s.batches = o.batches;
  s.batch_size = o.batch_size;
  s.epochs = o.epochs;
  char line[256];
  std::snprintf(line, sizeof line,
                "sweep: d = %.3f ms per batch (the device's), h = %.3f ms with no host work (queueing a batch): the "
                "quickest of %d measurements over %d synchronized batches, after 3 to warm up",
                s.device_s * 1e3, s.queue_host_s * 1e3, kDeviceRepeats, s.calibration_batches);
  out << line << std::endl;
  const SweepSettings& settings = *o.studies.find<SweepSettings>();
  for (const double f : settings.fractions) {
    if (interrupted(o)) break;
    const double target = f * s.device_s;
    HostWork w{0, o.host_work.kind, false};
    double checked_h = s.queue_host_s;
    if (target > s.queue_host_s) {
      // What the host work costs alone, then in the loop: its h against f·d, the miss taken off.
      w.ns = calibrated_host_work_ns(w.kind, target - s.queue_host_s);
      checked_h =
          measure_synchronized(o, kHostBatches, w, /*warm_up=*/false).measured.host_s_per_batch;  // warm by then
      // The loop's own cost per batch is about h0; a miss far past it is a
      // disturbed measurement (a stall on a busy machine), so the correction
      // is held to the larger of 2·h0 and a quarter of the target.
      const double most = std::max(2 * s.queue_host_s, 0.25 * target);
      w.ns = std::max<int64_t>(1000, w.ns + std::llround(std::clamp(target - checked_h, -most, most) * 1e9));
      w.ns = same_on_every_rank(o, w.ns);
    }
    std::snprintf(line, sizeof line,
                  "\n=== h/d = %g: h = %.3f ms; host work %.3f ms per batch (%s), h in synchronized batches %.3f ms "
                  "before the last correction ===",
                  f, target * 1e3, w.ns / 1e6, to_string(w.kind).c_str(), checked_h * 1e3);
    out << line << std::endl;
    Options fo = o;
    fo.host_work = w;
    if (!o.memory_log.empty()) fo.memory_log = tagged_path(o.memory_log, fraction_tag(f));
    std::vector<RunResult> these;
    const auto keep = [&] {
      for (RunResult& r : these) {
        SweepRow row;
        row.fraction = f;
        row.mode = r.label();
        row.run = runs.size();
        row.host_work_ns = w.ns;
        row.target_h_s = target;
        runs.push_back(std::move(r));
        s.rows.push_back(row);
      }
    };
    try {
      run_plan(compare_plan(fo, settings.compare_every), out, these);
    } catch (const RunFailed&) {
      keep();
      fill_predictions(s, runs);
      throw;
    }
    keep();
  }
  fill_predictions(s, runs);
}

namespace {

// One row's measured figures and both models' predictions, from its run.
void predict_row(SweepRow& row, const RunResult& r) {
  row.h_s = r.measured.host_s_per_batch;
  row.d_s = r.measured.device_s_per_batch;
  row.wall_s = r.measured.wall_s;
  row.predicted_wall_s = r.predicted.wall_s;
  row.samples_per_s = r.measured.samples_per_s;
  row.predicted_samples_per_s =
      r.predicted.wall_s > 0 ? double(r.measured.batches_done) * r.asked.options.batch_size / r.predicted.wall_s
                             : 0.0;
  row.peak_backlog = r.measured.peak_backlog_batches;
  row.predicted_backlog =
      predicted_backlog(r.measured.batches_done, r.predicted.every, r.measured.host_s_per_batch,
                        r.measured.device_s_per_batch, r.asked.options.max_pending_bytes, r.measured.bytes_per_batch);
  row.mem_increase_bytes = r.measured.mem_increase_bytes;
  row.predicted_increase_bytes = r.predicted.increase_bytes;
  row.model_increase_bytes = increase_for(r, row.predicted_backlog);
  if (!r.measured.epochs.empty()) {  // --epochs: the run's last epoch, warm (its fresh memory was the first epoch's)
    const EpochResult& e = r.measured.epochs.back();
    // The epoch's own h and d where measured (CPU devices); else the run's, less its fresh-memory term.
    const double d = e.device_s_per_batch > 0 ? e.device_s_per_batch
                     : r.measured.d_measured  ? std::max(0.0, r.measured.device_s_per_batch - r.measured.d_fresh_s)
                                              : r.measured.device_s_per_batch;
    const double h = e.device_s_per_batch > 0 ? e.host_s_per_batch : r.measured.host_s_per_batch;
    row.h_s = h;
    row.d_s = d;
    row.wall_s = e.wall_s;
    row.samples_per_s = e.samples_per_s;
    row.predicted_wall_s = predicted_wall_s(e.batches, r.predicted.every, h, d);
    row.predicted_samples_per_s =
        row.predicted_wall_s > 0 ? double(e.batches) * r.asked.options.batch_size / row.predicted_wall_s : 0;
    row.predicted_backlog = predicted_backlog(e.batches, r.predicted.every, h, d, r.asked.options.max_pending_bytes,
                                              r.measured.bytes_per_batch);
    row.mem_increase_bytes = e.mem_increase_bytes;
    row.peak_backlog = e.peak_backlog_batches;
    row.predicted_increase_bytes = increase_for(r, e.peak_backlog_batches);  // the summary's rule, the epoch's backlog
    row.model_increase_bytes = increase_for(r, row.predicted_backlog);
  }
}

// Speed-ups over the batch run at the same fraction (per batch, so an
// interrupted run compares too).
void fill_speedups(SweepResult& s, const std::vector<RunResult>& runs) {
  for (SweepRow& row : s.rows) {
    const auto base = std::find_if(s.rows.begin(), s.rows.end(),
                                   [&](const SweepRow& b) { return b.fraction == row.fraction && b.mode == "batch"; });
    if (base == s.rows.end()) continue;
    const RunResult &r = runs.at(row.run), &b = runs.at(base->run);
    row.speedup = ratio(row.samples_per_s, base->samples_per_s);
    if (!r.measured.epochs.empty())
      row.predicted_speedup = ratio(base->predicted_wall_s, row.predicted_wall_s);  // one epoch each
    else if (r.measured.batches_done && b.measured.batches_done)
      row.predicted_speedup =
          ratio(b.predicted.wall_s / b.measured.batches_done, r.predicted.wall_s / r.measured.batches_done);
  }
}

// Each mode's curve: its K and bound, at the sweep's d, over 0 .. the largest fraction.
void fill_curves(SweepResult& s, const std::vector<RunResult>& runs) {
  s.curves.clear();
  double x_max = 0;
  for (const SweepRow& row : s.rows) x_max = std::max({x_max, row.fraction, s.device_s > 0 ? row.h_s / s.device_s : 0.0});
  x_max = std::max(1.5, x_max * 1.05);
  for (const SweepRow& row : s.rows) {
    if (row.fraction != s.rows.front().fraction) break;  // the first fraction's runs name every mode
    const RunResult& r = runs.at(row.run);
    SweepCurve c;
    c.mode = row.mode;
    c.every =
        model_every(r.asked.options.sync, s.batches, r.asked.options.max_pending_bytes, r.measured.bytes_per_batch);
    for (int i = 0; i < kCurvePoints; ++i) {
      SweepCurvePoint p;
      p.x = x_max * i / (kCurvePoints - 1);
      const double h = p.x * s.device_s;
      const double mode_wall = predicted_wall_s(s.batches, c.every, h, s.device_s);
      p.speedup = ratio(predicted_wall_s(s.batches, 1, h, s.device_s), mode_wall);
      p.backlog = predicted_backlog(s.batches, c.every, h, s.device_s, r.asked.options.max_pending_bytes,
                                    r.measured.bytes_per_batch);
      p.increase_bytes = increase_for(r, p.backlog);
      c.points.push_back(p);
    }
    s.curves.push_back(std::move(c));
  }
}

}  // namespace

void fill_predictions(SweepResult& s, const std::vector<RunResult>& runs) {
  for (SweepRow& row : s.rows) {
    const RunResult& r = runs.at(row.run);
    predict_row(row, r);
    s.bytes_per_batch = std::max(s.bytes_per_batch, r.measured.bytes_per_batch);
    s.largest_tensor_bytes = std::max(s.largest_tensor_bytes, r.measured.largest_tensor_bytes);
    if (row.mode == "bounded") s.max_pending_bytes = r.asked.options.max_pending_bytes;
  }
  fill_speedups(s, runs);
  fill_curves(s, runs);
}

void print_sweep_table(const SweepResult& s, std::ostream& out) {
  if (s.rows.empty()) return;
  char buf[320];
  if (s.epochs > 1)
    std::snprintf(buf, sizeof buf,
                  "\nsweep: %d epochs of %d batches of %d, d = %.3f ms per batch; each cell the run's last epoch (warm: "
                  "the pool reuses the first epoch's blocks), measured / predicted\n",
                  s.epochs, s.batches, s.batch_size, s.device_s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "\nsweep: %d batches of %d, d = %.3f ms per batch; each cell measured / predicted\n",
                  s.batches, s.batch_size, s.device_s * 1e3);
  out << buf;
  std::snprintf(buf, sizeof buf, "%-5s %-9s %6s %8s %8s %6s %6s %6s %6s %6s %8s %8s %6s\n", "h/d", "mode", "h/d",
                "samp/s", "pred", "m/p", "speed", "pred", "bklog", "pred", "mem MB", "pred MB", "m/p");
  out << buf;
  double last_f = -1;
  std::vector<std::string> misses;
  for (const SweepRow& row : s.rows) {
    if (row.fraction != last_f && last_f >= 0) out << "\n";
    last_f = row.fraction;
    const double tput = ratio(row.samples_per_s, row.predicted_samples_per_s);
    const double mem = ratio(double(row.mem_increase_bytes), double(row.predicted_increase_bytes));
    std::snprintf(buf, sizeof buf, "%-5g %-9s %6.2f %8.0f %8.0f %6.2f %6.2f %6.2f %6d %6d %8.1f %8.1f %6.2f\n",
                  row.fraction, row.mode.c_str(), s.device_s > 0 ? row.h_s / s.device_s : 0.0, row.samples_per_s,
                  row.predicted_samples_per_s, tput, row.speedup, row.predicted_speedup, row.peak_backlog,
                  row.predicted_backlog, row.mem_increase_bytes / 1e6, row.predicted_increase_bytes / 1e6, mem);
    out << buf;
    char who[64];
    std::snprintf(who, sizeof who, "%s at h/d %g", row.mode.c_str(), row.fraction);
    if (std::fabs(tput - 1) > 0.1) misses.push_back(std::string(who) + ": samples/s " + std::to_string(tput).substr(0, 4));
    if (row.predicted_increase_bytes && std::fabs(mem - 1) > 0.1)
      misses.push_back(std::string(who) + ": memory " + std::to_string(mem).substr(0, 4));
  }
  out << "h/d: asked for, then measured (h the frontend's time per batch, d the sweep's); samp/s against the\n"
      << "throughput model (" << kThroughputFormula << ", each run's own h and d); speed:\n"
      << "samples/s over batch's at the same h/d; bklog: peak batches alive, predicted from h and d (K - floor((K-1)h/d),\n"
      << "capped by the bound); mem: the increase against peak backlog x bytes per batch (the summary's prediction).\n";
  if (misses.empty()) {
    out << "every point within 10% of both models.\n";
  } else {
    out << "off by more than 10% (measured / predicted):";
    for (size_t i = 0; i < misses.size(); ++i) out << (i % 4 == 0 ? "\n  " : "; ") << misses[i];
    out << "\n";
  }
  out.flush();
}

// The tables of sweep.h: one row a key, in the summary's order.
// clang-format off
const std::vector<Figure<SweepRowOf>> kSweepRowFigures = {
  {"fraction", "", "f: the h/d asked for", [](const SweepRowOf& p) -> Json { return p.row.fraction; }},
  {"mode", "", "the mode of `--compare`: `batch`, `none`, `every=K`, `bounded`", [](const SweepRowOf& p) -> Json { return p.row.mode; }},
  {"run", "", "its run's index in `runs`", [](const SweepRowOf& p) -> Json { return p.row.run; }},
  {"host_work_s", "s", "the host work asked for per batch, calibrated so that the measured h is f x d", [](const SweepRowOf& p) -> Json { return p.row.host_work_ns * 1e-9; }},
  {"target_h_s", "s", "f x d", [](const SweepRowOf& p) -> Json { return p.row.target_h_s; }},
  {"h_s", "s", "h, measured in the run", [](const SweepRowOf& p) -> Json { return p.row.h_s; }},
  {"d_s", "s", "d, measured in the run", [](const SweepRowOf& p) -> Json { return p.row.d_s; }},
  {"x", "", "h over the sweep's d", [](const SweepRowOf& p) -> Json { return p.sweep.device_s > 0 ? p.row.h_s / p.sweep.device_s : 0.0; }},
  {"wall_s", "s", "the run's wall time", [](const SweepRowOf& p) -> Json { return p.row.wall_s; }},
  {"predicted_wall_s", "s", "the throughput model's (the run's `predicted_wall_s`)", [](const SweepRowOf& p) -> Json { return p.row.predicted_wall_s; }},
  {"samples_per_s", "samples/s", "the run's throughput", [](const SweepRowOf& p) -> Json { return p.row.samples_per_s; }},
  {"predicted_samples_per_s", "samples/s", "the throughput model's", [](const SweepRowOf& p) -> Json { return p.row.predicted_samples_per_s; }},
  {"speedup", "", "over `batch` at this fraction", [](const SweepRowOf& p) -> Json { return p.row.speedup; }},
  {"predicted_speedup", "", "`batch`'s predicted wall time over this one's", [](const SweepRowOf& p) -> Json { return p.row.predicted_speedup; }},
  {"peak_backlog", "batches", "the most batches alive at once", [](const SweepRowOf& p) -> Json { return p.row.peak_backlog; }},
  {"predicted_backlog", "batches", "the backlog predicted from the run's h and d", [](const SweepRowOf& p) -> Json { return p.row.predicted_backlog; }},
  {"mem_increase_bytes", "bytes", "the run's tracked memory increase", [](const SweepRowOf& p) -> Json { return p.row.mem_increase_bytes; }},
  {"predicted_increase_bytes", "bytes", "the memory model's: peak backlog x bytes per batch (capped when bounded)", [](const SweepRowOf& p) -> Json { return p.row.predicted_increase_bytes; }},
  {"model_increase_bytes", "bytes", "from h and d alone: predicted backlog x bytes per batch (capped)", [](const SweepRowOf& p) -> Json { return p.row.model_increase_bytes; }},
};

const std::vector<Figure<SweepResult>> kSweepModelFigures = {
  {"device_s", "s", "d, over synchronized batches", [](const SweepResult& s) -> Json { return s.device_s; }},
  {"queue_host_s", "s", "h with no host work: queueing a batch", [](const SweepResult& s) -> Json { return s.queue_host_s; }},
  {"batches", "batches", "each run's", [](const SweepResult& s) -> Json { return s.batches; }},
  {"epochs", "", "each run's (`--epochs`; a row is its run's last)", [](const SweepResult& s) -> Json { return s.epochs; }},
  {"batch_size", "rows", "each batch's", [](const SweepResult& s) -> Json { return s.batch_size; }},
  {"bytes_per_batch", "bytes", "what one batch allocates (the curves' memory unit)", [](const SweepResult& s) -> Json { return s.bytes_per_batch; }},
  {"curves", "", "one object per mode (the next table)", [](const SweepResult& s) -> Json { return figures_array(sweep_curve_figures(), s.curves); }},
};

const std::vector<Figure<SweepCurve>> kSweepCurveFigures = {
  {"mode", "", "the mode", [](const SweepCurve& c) -> Json { return c.mode; }},
  {"every", "batches", "the model's synchronization interval K", [](const SweepCurve& c) -> Json { return c.every; }},
  {"points", "", "its predictions over x = h/d at the sweep's d, without fresh memory (the next table)", [](const SweepCurve& c) -> Json { return figures_array(sweep_point_figures(), c.points); }},
};

const std::vector<Figure<SweepCurvePoint>> kSweepPointFigures = {
  {"x", "", "h/d", [](const SweepCurvePoint& p) -> Json { return p.x; }},
  {"speedup", "", "the predicted speed-up over `batch`", [](const SweepCurvePoint& p) -> Json { return p.speedup; }},
  {"backlog", "batches", "the predicted backlog", [](const SweepCurvePoint& p) -> Json { return p.backlog; }},
  {"increase_bytes", "bytes", "the predicted memory increase", [](const SweepCurvePoint& p) -> Json { return p.increase_bytes; }},
};
// clang-format on

const std::vector<Figure<SweepRowOf>>& sweep_row_figures() { return kSweepRowFigures; }
const std::vector<Figure<SweepResult>>& sweep_model_figures() { return kSweepModelFigures; }
const std::vector<Figure<SweepCurve>>& sweep_curve_figures() { return kSweepCurveFigures; }
const std::vector<Figure<SweepCurvePoint>>& sweep_point_figures() { return kSweepPointFigures; }

Json sweep_rows_json(const SweepResult& s) {
  Json rows = Json::array();
  for (const SweepRow& r : s.rows) rows.push_back(figures_object(sweep_row_figures(), SweepRowOf{s, r}));
  return rows;
}

Json sweep_model_json(const SweepResult& s) { return figures_object(sweep_model_figures(), s); }

std::string sweep_markdown() {
  return "Each of `\"sweep\"`:\n\n" + figures_table(sweep_row_figures()) + "\n`\"sweep_model\"`:\n\n" +
         figures_table(sweep_model_figures()) + "\nEach of `curves`:\n\n" + figures_table(sweep_curve_figures()) +
         "\nEach of `points`:\n\n" + figures_table(sweep_point_figures());
}

namespace {

// Its own loop (d measured, host work calibrated per fraction), one table,
// and the summary's "sweep" and "sweep_model" sections once it has started.
class Sweep : public Study {
 public:
  std::vector<std::string> memory_logs(const Options& o) const override {  // --compare's for each fraction
    std::vector<std::string> logs;
    if (o.memory_log.empty()) return logs;
    const SweepSettings& settings = *o.studies.find<SweepSettings>();
    for (double f : settings.fractions) {
      Options c = o;
      c.memory_log = tagged_path(o.memory_log, fraction_tag(f));
      for (const std::string& log : train::memory_logs(compare_plan(c, settings.compare_every))) logs.push_back(log);
    }
    return logs;
  }
  void run(const Options& o, std::ostream& out, std::vector<RunResult>& results) override {
    started_ = true;
    run_sweep(o, out, results, sweep_);
  }
  void report(const Options&, const std::vector<RunResult>&, std::ostream& out) const override {
    print_sweep_table(sweep_, out);
  }
  void write_summary(const std::string& path, const std::vector<RunResult>& results) const override {
    std::vector<SummarySection> sections;
    if (started_) {
      const auto text = [](const Json& j) {
        return j.dump();
      };
      sections = {{"sweep", text(sweep_rows_json(sweep_))}, {"sweep_model", text(sweep_model_json(sweep_))}};
    }
    write_summary_json(path, results, sections);
  }

 private:
  bool started_ = false;
  SweepResult sweep_;
};

// Before --compare and --compare-policies: --sweep runs --compare's modes itself.
const RegisterStudy sweep{{"sweep", false, 10, [](const Options& o) { return o.studies.asked<SweepSettings>(); },
                           [] { return std::unique_ptr<Study>(std::make_unique<Sweep>()); }}};

// clang-format off
const RegisterStudyOptions sweep_options{{"sweep", 40,
    [](Declare& d) {
      d.flag("sweep", "measure the device's time per batch d, then run every mode of --compare at the frontend's "
        "time per batch h = f x d for each f of --sweep-fractions; one table: samples/s, speed-up over batch, "
        "peak backlog and memory increase beside both models' predictions (see below; default: off)")
       .option<std::vector<double>>("sweep-fractions", "F1,F2,..", "0,0.25,0.5,0.75,1,1.5", parse_sweep_fractions,
        "the h/d --sweep runs, each in [0, 10]");
    },
    [](const po::variables_map& vm) -> std::any {
      if (!vm["sweep"].as<bool>()) return {};
      return SweepSettings{vm["sweep-fractions"].as<std::vector<double>>(), vm["compare-every"].as<std::vector<int>>()};
    },
    [](const Options& o) -> std::string {
      if (!o.studies.asked<SweepSettings>()) return "";
      if (std::string why = one_model_problem(o, "--sweep"); !why.empty()) return why;
      if (o.studies.asked<PoliciesSettings>())
        return "--sweep runs --compare's modes, not the allocation policies: drop --compare-policies";
      if (o.host_work.ns || o.host_work.match_device)
        return "--sweep sets the host work itself, at each of --sweep-fractions x d: drop --host-work";
      return "";
    },
    "\n--sweep first measures d, the device's time per batch, and h0, the frontend's with no host work,\n"
    "  over 16 synchronized batches (the quickest of 3), then runs --compare's modes at each fraction f\n"
    "  of --sweep-fractions with the frontend's time per batch h = f x d: the host work\n"
    "  (--host-work-kind) is timed alone, then in 16 synchronized batches, and corrected by the miss\n"
    "  (at most 2 x h0 or f x d / 4). One table: per (f, mode) samples/s, speed-up over batch, peak\n"
    "  backlog and memory increase, each beside the models' predictions. --memory-log out/mem.csv\n"
    "  writes out/mem.h0.5d.none.csv ...;\n"
    "  --summary-json writes {\"runs\": [...], \"sweep\": [one row per (f, mode)], \"sweep_model\": {the\n"
    "  models' curves over h/d}} (tools/plot_sweep.py draws it).\n"}};
// clang-format on

}  // namespace

}  // namespace amlp::train
