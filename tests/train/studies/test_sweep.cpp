// test_sweep.cpp — train_mlp --sweep: its options, the host work's
// calibration, one small sweep's table and summary rows (each prediction the
// one the run's own summary carries, each curve from train/predict/predict.h), and the
// plot tools/plot_sweep.py draws from it.
#include <gtest/gtest.h>

#include <algorithm>
#include "framework/json.h"

#include "train/options/options.h"
#include "train/predict/predict.h"
#include "train/plan/outputs.h"
#include "train/studies/comparisons.h"
#include "train/studies/sweep.h"
#include "train/train_test_util.h"
#include "sanitized.h"

namespace amlp::train {
namespace {

using testing::host_python;
using testing::expect_bad_input;
using testing::Ran;
using testing::read_file;
using testing::read_json;
using testing::run_command;
using testing::run_train_mlp;
using testing::ScratchDir;
using testing::source_file;
using testing::split_lines;

TEST(SweepOptions, FractionsDefaultAndParse) {
  const ParseOutcome d = parse_options(std::vector<std::string>{});
  ASSERT_EQ(d.status, ParseStatus::Run) << d.message;
  EXPECT_FALSE(d.options.studies.asked<SweepSettings>());
  EXPECT_EQ(d.options.studies.find<SweepSettings>(), nullptr);
  const ParseOutcome a = parse_options({"--sweep"});
  ASSERT_EQ(a.status, ParseStatus::Run) << a.message;
  ASSERT_NE(a.options.studies.find<SweepSettings>(), nullptr);
  EXPECT_EQ(a.options.studies.find<SweepSettings>()->fractions,
            (std::vector<double>{0, 0.25, 0.5, 0.75, 1, 1.5}));
  EXPECT_EQ(a.options.studies.find<SweepSettings>()->compare_every, (std::vector<int>{2, 10}));
  const ParseOutcome p = parse_options({"--sweep", "--sweep-fractions", "0.5,2", "--compare-every", "4"});
  ASSERT_EQ(p.status, ParseStatus::Run) << p.message;
  ASSERT_NE(p.options.studies.find<SweepSettings>(), nullptr);
  EXPECT_EQ(p.options.studies.find<SweepSettings>()->fractions, (std::vector<double>{0.5, 2}));
  EXPECT_EQ(p.options.studies.find<SweepSettings>()->compare_every, (std::vector<int>{4}));
  EXPECT_FALSE(p.options.studies.asked<CompareSettings>());  // --compare-every alone does not ask for --compare
}

TEST(SweepOptions, IniKeySweepTrue) {
  ScratchDir dir;
  const std::string ini = dir.write("s.ini", "sweep = true\nsweep-fractions = 0,1\n");
  const ParseOutcome p = parse_options({"--config", ini});
  ASSERT_EQ(p.status, ParseStatus::Run) << p.message;
  ASSERT_NE(p.options.studies.find<SweepSettings>(), nullptr);
  EXPECT_EQ(p.options.studies.find<SweepSettings>()->fractions, (std::vector<double>{0, 1}));
}

// Bad input: one line naming the option, exit 2, nothing run.
TEST(SweepOptions, BadFractionsAreOneLineAndExitTwo) {
  expect_bad_input({
      {"--sweep --sweep-fractions 0,abc", "--sweep-fractions"},
      {"--sweep --sweep-fractions -0.5", "--sweep-fractions"},
      {"--sweep --sweep-fractions 0,,1", "--sweep-fractions"},
      {"--sweep --sweep-fractions 11", "in [0, 10]"},
      {"--sweep --sweep-fractions 1,1", "names 1 twice"},
      {"--sweep --sweep-fractions nan", "--sweep-fractions"},
      {"--sweep --host-work 2ms", "--sweep sets the host work itself"},
      {"--sweep --compare-policies", "drop --compare-policies"},
  });
}

// A sleep overshoots: what is requested to spend a target is the target less
// the overshoot, never more than the target.
TEST(SweepCalibration, HostWorkRequestAllowsForTheOvershoot) {
  EXPECT_EQ(calibrated_host_work_ns(HostWorkKind::Wait, 0), 0);
  const int64_t ns = calibrated_host_work_ns(HostWorkKind::Wait, 0.002);
  EXPECT_GE(ns, 1000);
  EXPECT_LE(ns, 2000000);
  EXPECT_EQ(fraction_tag(0.5), "h0.5d");
}

TEST(SweepModel, BacklogFollowsHOverD) {
  EXPECT_EQ(predicted_backlog(100, 100, 0, 0.001, 0, 1000), 100);     // no host work: all queued
  EXPECT_EQ(predicted_backlog(100, 100, 0.0005, 0.001, 0, 1000), 51);  // 100 - floor(99 / 2)
  EXPECT_EQ(predicted_backlog(100, 100, 0.001, 0.001, 0, 1000), 1);    // h = d: the device keeps up
  EXPECT_EQ(predicted_backlog(100, 10, 0, 0.001, 0, 1000), 10);       // every=10
  EXPECT_EQ(predicted_backlog(100, 1, 0, 0.001, 0, 1000), 1);         // batch
  EXPECT_EQ(predicted_backlog(100, 100, 0, 0.001, 2000, 1000), 3);    // bounded at two batches: 2 + the one queued
  EXPECT_EQ(backlog_increase(3, 1000, 0, 0), 3000u);
  EXPECT_EQ(backlog_increase(3, 1000, 2000, 100), 2100u);
}

class Sweep : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir;
    ran_ = new Ran(run_train_mlp("--device cpu --sweep --sweep-fractions 0,1 --batches 8 --batch-size 64 "
                                 "--features 64 --hidden 128 --compare-every 4 --quiet --summary-json " +
                                 dir_->file("s.json")));
  }
  static void TearDownTestSuite() {
    delete ran_;
    delete dir_;
  }
  static ScratchDir* dir_;
  static Ran* ran_;
  const std::vector<std::string> modes{"batch", "none", "every=4", "bounded"};
};
ScratchDir* Sweep::dir_ = nullptr;
Ran* Sweep::ran_ = nullptr;

TEST_F(Sweep, OneTableWithARowPerFractionAndMode) {
  ASSERT_EQ(ran_->code, 0) << ran_->err;
  const std::string& out = ran_->out;
  EXPECT_NE(out.find("sweep: d = "), std::string::npos) << out;
  const size_t table = out.find("\nsweep: 8 batches of 64, d = ");
  ASSERT_NE(table, std::string::npos) << out;
  EXPECT_EQ(out.find("\nsweep: 8 batches", table + 1), std::string::npos) << "one table";
  std::vector<std::string> rows;
  for (const std::string& l : split_lines(out.substr(table)))
    for (const char* f : {"0 ", "1 "})
      for (const std::string& m : modes)
        if (l.rfind(std::string(f) + std::string(5 - std::string(f).size(), ' ') + " " + m + " ", 0) == 0)
          rows.push_back(l);
  EXPECT_EQ(rows.size(), 8u) << out.substr(table);
  for (const std::string& l : rows) EXPECT_GE(l.size(), 90u) << l;  // every column filled
  EXPECT_NE(out.find("each cell measured / predicted"), std::string::npos);
}

TEST_F(Sweep, JsonRowsCarryTheSummarysPredictions) {
  ASSERT_EQ(ran_->code, 0) << ran_->err;
  const amlp::Json s = read_json(dir_->file("s.json"));
  ASSERT_TRUE(s.is_object());
  const amlp::Json& runs = s.at("runs");
  const amlp::Json& rows = s.at("sweep");
  ASSERT_EQ(runs.size(), 8u);
  ASSERT_EQ(rows.size(), 8u);  // 2 fractions x 4 modes
  const double d = s.at("sweep_model").at("device_s").get<double>();
  EXPECT_GT(d, 0.0);
  for (size_t i = 0; i < rows.size(); ++i) {
    const amlp::Json& row = rows[i];
    const double f = row.at("fraction").get<double>();
    EXPECT_EQ(f, i < 4 ? 0.0 : 1.0);
    EXPECT_EQ(row.at("mode"), modes[i % 4]);
    const amlp::Json& run = runs.at(row.at("run").get<size_t>());
    EXPECT_EQ(run.at("label"), row.at("mode"));
    // The same numbers the run's summary predicts, from the same code.
    EXPECT_EQ(row.at("predicted_increase_bytes"), run.at("predicted_increase_bytes"));
    EXPECT_EQ(row.at("predicted_wall_s"), run.at("predicted_wall_s"));
    EXPECT_EQ(row.at("mem_increase_bytes"), run.at("mem_increase_bytes"));
    EXPECT_EQ(row.at("samples_per_s"), run.at("samples_per_s"));
    const double h = run.at("host_s_per_batch").get<double>(), dr = run.at("device_s_per_batch").get<double>();
    EXPECT_DOUBLE_EQ(row.at("h_s").get<double>(), h);
    EXPECT_DOUBLE_EQ(row.at("x").get<double>(), h / d);
    EXPECT_NEAR(row.at("predicted_samples_per_s").get<double>(), 8 * 64 / run.at("predicted_wall_s").get<double>(), 1e-6);
    const int every = run.at("model_every").get<int>();
    EXPECT_EQ(row.at("predicted_backlog").get<int>(),
              predicted_backlog(8, every, h, dr, run.at("max_pending_bytes").get<size_t>(),
                                run.at("bytes_per_batch").get<size_t>()));
    // The host work: none at f = 0; at f = 1 what tops the loop's own time
    // per batch up to d (none where the loop alone takes longer: a loaded or
    // sanitized build); the same for every mode of a fraction.
    const double hw = row.at("host_work_s").get<double>(), h0 = s.at("sweep_model").at("queue_host_s").get<double>();
    EXPECT_EQ(run.at("host_work_s").get<double>(), hw);
    if (f == 0) EXPECT_EQ(hw, 0.0);
    else EXPECT_EQ(hw > 0, f * d > h0) << "target h " << f * d << " s, the loop's own h " << h0 << " s";
    EXPECT_EQ(hw, rows[i - i % 4].at("host_work_s").get<double>());
    if (row.at("mode") == "batch") {
      EXPECT_DOUBLE_EQ(row.at("speedup").get<double>(), 1.0);
      EXPECT_DOUBLE_EQ(row.at("predicted_speedup").get<double>(), 1.0);
    } else {
      const amlp::Json& base = runs.at(rows[i - i % 4].at("run").get<size_t>());
      EXPECT_DOUBLE_EQ(row.at("speedup").get<double>(),
                       run.at("samples_per_s").get<double>() / base.at("samples_per_s").get<double>());
      EXPECT_DOUBLE_EQ(row.at("predicted_speedup").get<double>(),
                       base.at("predicted_wall_s").get<double>() / run.at("predicted_wall_s").get<double>());
    }
  }
}

TEST_F(Sweep, CurvesComeFromTheThroughputAndMemoryModels) {
  ASSERT_EQ(ran_->code, 0) << ran_->err;
  const amlp::Json s = read_json(dir_->file("s.json"));
  const amlp::Json& model = s.at("sweep_model");
  const double d = model.at("device_s").get<double>();
  ASSERT_EQ(model.at("curves").size(), modes.size());
  for (size_t m = 0; m < modes.size(); ++m) {
    const amlp::Json& c = model.at("curves")[m];
    EXPECT_EQ(c.at("mode"), modes[m]);
    const int k = c.at("every").get<int>();
    EXPECT_EQ(k, modes[m] == "batch" ? 1 : modes[m] == "every=4" ? 4 : 8) << modes[m];
    const amlp::Json& run = s.at("runs")[m];
    ASSERT_GT(c.at("points").size(), 10u);
    for (const amlp::Json& p : c.at("points")) {
      const double h = p.at("x").get<double>() * d;
      EXPECT_DOUBLE_EQ(p.at("speedup").get<double>(), predicted_wall_s(8, 1, h, d) / predicted_wall_s(8, k, h, d));
      const int backlog = predicted_backlog(8, k, h, d, run.at("max_pending_bytes").get<size_t>(),
                                            run.at("bytes_per_batch").get<size_t>());
      EXPECT_EQ(p.at("backlog").get<int>(), backlog);
      EXPECT_EQ(p.at("increase_bytes").get<size_t>(),
                backlog_increase(backlog, run.at("bytes_per_batch").get<size_t>(),
                                 run.at("max_pending_bytes").get<size_t>(), run.at("largest_tensor_bytes").get<size_t>()));
    }
  }
}

// The sections' objects have the keys sweep.cpp declares, in its order.
template <typename R>
std::vector<std::string> declared(const std::vector<Figure<R>>& figures) {
  std::vector<std::string> keys;
  for (const Figure<R>& f : figures) keys.push_back(f.key);
  return keys;
}
std::vector<std::string> keys_of(const amlp::Json& object) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : object.items()) keys.push_back(k);
  return keys;
}

TEST_F(Sweep, SectionsHaveTheDeclaredKeysInOrder) {
  ASSERT_EQ(ran_->code, 0) << ran_->err;
  const amlp::Json s = read_json(dir_->file("s.json"));
  for (const amlp::Json& row : s.at("sweep")) EXPECT_EQ(keys_of(row), declared(sweep_row_figures()));
  const amlp::Json& model = s.at("sweep_model");
  EXPECT_EQ(keys_of(model), declared(sweep_model_figures()));
  const amlp::Json& curve = model.at("curves").at(0);
  EXPECT_EQ(keys_of(curve), declared(sweep_curve_figures()));
  EXPECT_EQ(keys_of(curve.at("points").at(0)), declared(sweep_point_figures()));
}

// docs/cli.md's tables of the sweep's keys are the ones sweep.cpp declares,
// row for row (key, unit, meaning), so the page cannot drift from the code.
TEST(SweepKeys, CliMdsTablesAreTheDeclaredOnes) {
  EXPECT_TRUE(amlp::testing::page_section_is("docs/cli.md", "<!-- sweep keys: train/studies/sweep.cpp -->\n",
                                              "<!-- /sweep keys -->", sweep_markdown(), "train/studies/sweep.cpp"));
}

// tools/plot_sweep.py draws both panels from the summary (skipped without matplotlib).
TEST_F(Sweep, PlotRendersSvgAndPng) {
  ASSERT_EQ(ran_->code, 0) << ran_->err;
  if (amlp::testing::kSanitized)
    GTEST_SKIP() << "tools/plot_sweep.py is Python, which no sanitizer instruments: the release build runs it";
  if (run_command(host_python() + " -c 'import matplotlib'").code != 0)
    GTEST_SKIP() << "no matplotlib for " << host_python() << " (apt-get install python3-matplotlib)";
  const std::string tool = host_python() + " " + source_file("tools/plot_sweep.py") + " ";
  Ran svg = run_command(tool + dir_->file("s.json") + " -o " + dir_->file("sweep.svg"));
  ASSERT_EQ(svg.code, 0) << svg.err;
  EXPECT_EQ(svg.out, "wrote " + dir_->file("sweep.svg") + "\n");
  const std::string text = read_file(dir_->file("sweep.svg"));
  EXPECT_GT(text.size(), 10000u);
  EXPECT_NE(text.find(">Speed-up over batch</text>"), std::string::npos);
  EXPECT_NE(text.find(">Memory increase</text>"), std::string::npos);
  for (const std::string& m : modes) EXPECT_NE(text.find(">" + m + "</text>"), std::string::npos) << m;
  // Every mode's model curve in both panels, none's too (dashed: bounded's speed-up curve is the same).
  for (const std::string& m : modes) {
    std::string id = m;
    id.erase(std::remove(id.begin(), id.end(), '='), id.end());
    for (const char* panel : {"speedup", "memory"})
      EXPECT_NE(text.find("<g id=\"model-" + std::string(panel) + "-" + id + "\">"), std::string::npos)
          << m << " " << panel;
  }
  const size_t none_curve = text.find("<g id=\"model-speedup-none\">");
  ASSERT_NE(none_curve, std::string::npos);
  EXPECT_NE(text.substr(none_curve, text.find("</g>", none_curve) - none_curve).find("stroke-dasharray"),
            std::string::npos) << "none's curve is dashed";
  Ran png = run_command(tool + dir_->file("s.json") + " -o " + dir_->file("sweep.png"));
  ASSERT_EQ(png.code, 0) << png.err;
  const std::string bytes = read_file(dir_->file("sweep.png"));
  ASSERT_GT(bytes.size(), 20000u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  // Not a sweep summary: one line, exit 2.
  const std::string plain = dir_->write("plain.json", "[{\"label\": \"none\"}]");
  Ran bad = run_command(tool + plain + " -o " + dir_->file("x.svg"));
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("not a sweep summary"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace amlp::train
