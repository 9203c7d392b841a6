// test_train_e2e.cpp — the README's main command, `train_mlp --config
// configs/quick.ini --compare`, run in-process on cpu:0 at half its batches
// (50: the backlog of `none` still reaches many times `batch`'s), a quarter
// under the sanitizers (24: the backlog can still reach 24, the 4 times
// `batch`'s the test asks for six times over, and a mode's run is 5 s under
// TSan, not 10, whose race checks see every op all the same): the unsynchronized
// run's backlog and memory are several times the synchronized run's, the
// memory model predicts the increase, every mode reaches the same loss, and
// back-pressure keeps the memory within its bound; in the trace each mode's
// spans carry its name. No timing assertions.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>

#include "train/driver.h"
#include "train/runs/experiment.h"
#include "train/options/options.h"
#include "train/train_test_util.h"
#include "sanitized.h"
#include "test_paths.h"
#include "train/studies/comparisons.h"

namespace amlp::train {
namespace {

using amlp::testing::json_text;

// CTest runs each test in a process of its own, so the comparison (several
// seconds) runs once, in one test, and each property is checked in its own
// function below.
struct Compare {
  Options options;
  const std::vector<int>& every() const { return options.studies.find<CompareSettings>()->every; }
  std::string output;
  amlp::Json trace;
  std::map<std::string, RunResult> runs;
  const RunResult& run(const std::string& label) const {
    auto it = runs.find(label);
    if (it == runs.end()) throw std::runtime_error("no run '" + label + "'");
    return it->second;
  }
};

void runs_every_mode(const Compare& c) {
  ASSERT_EQ(c.runs.size(), 3 + c.every().size());
  for (const char* label : {"batch", "none", "bounded"}) EXPECT_TRUE(c.runs.count(label)) << label;
  for (int k : c.every()) EXPECT_TRUE(c.runs.count("every=" + std::to_string(k))) << k;
  for (const auto& [label, r] : c.runs) {
    EXPECT_EQ(r.asked.options.batches, c.options.batches) << label;
    EXPECT_EQ(r.measured.device, "cpu:0") << label;
    EXPECT_GT(r.measured.bytes_per_batch, 0u) << label;
  }
}

void prints_the_books_lines_and_the_table(const Compare& c) {
  const int n = c.options.batches;
  const int half = n >= 100 ? 50 : n / 2;
  EXPECT_NE(c.output.find("batch " + std::to_string(half) + ", time "), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("batch " + std::to_string(n) + ", time "), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("increased memory: "), std::string::npos);
  for (const char* column :
       {"mode", "wall s", "samples/s", "mem incr MB", "peak backlog", "predicted MB", "final loss"})
    EXPECT_NE(c.output.find(column), std::string::npos) << column;
}

void unsynchronized_is_several_times_synchronized(const Compare& c) {
  const RunResult &sync = c.run("batch"), &none = c.run("none");
  EXPECT_EQ(sync.measured.peak_backlog_batches, 1);  // the batch in flight
  EXPECT_GE(none.measured.peak_backlog_batches, 4 * sync.measured.peak_backlog_batches);
  EXPECT_GE(none.measured.peak_queue_depth, 4 * sync.measured.peak_queue_depth);
  EXPECT_GT(sync.measured.mem_increase_bytes, 0u);
  EXPECT_GE(none.measured.mem_increase_bytes, 4 * sync.measured.mem_increase_bytes);
}

void memory_model_predicts_the_increase(const Compare& c) {
  const RunResult& none = c.run("none");
  const double measured = double(none.measured.mem_increase_bytes), predicted = double(none.predicted.increase_bytes);
  EXPECT_EQ(none.predicted.increase_bytes, size_t(none.measured.peak_backlog_batches) * none.measured.bytes_per_batch);
  EXPECT_NEAR(predicted, measured, 0.10 * measured) << "predicted " << predicted << ", measured " << measured;
  // Everywhere the model is an upper bound, and not a loose one: the worker
  // may only have freed part of the batch it is running.
  for (const auto& [label, r] : c.runs) {
    EXPECT_LE(r.measured.mem_increase_bytes, r.predicted.increase_bytes) << label;
    EXPECT_GE(double(r.measured.mem_increase_bytes), 0.5 * double(r.predicted.increase_bytes)) << label;
  }
  for (int k : c.every())  // every=K holds at most K batches
    EXPECT_LE(c.run("every=" + std::to_string(k)).measured.peak_backlog_batches, k) << k;
}

void every_mode_reaches_the_same_loss(const Compare& c) {
  const double ref = c.run("batch").measured.final_loss;
  ASSERT_TRUE(std::isfinite(ref));
  for (const auto& [label, r] : c.runs) EXPECT_NEAR(r.measured.final_loss, ref, 1e-5 * std::fabs(ref)) << label;
}

void back_pressure_keeps_memory_within_its_bound(const Compare& c) {
  const RunResult& b = c.run("bounded");
  ASSERT_GT(b.asked.options.max_pending_bytes, 0u);
  EXPECT_NEAR(double(b.asked.options.max_pending_bytes), 2.0 * double(c.run("none").measured.bytes_per_batch),
              0.01 * double(b.asked.options.max_pending_bytes));  // about two batches' footprint
  EXPECT_LE(b.measured.mem_increase_bytes, b.asked.options.max_pending_bytes + b.measured.largest_tensor_bytes);
  EXPECT_LT(b.measured.mem_increase_bytes, c.run("none").measured.mem_increase_bytes / 4);
}

// The modes run one after another on the same tracks; each span says whose
// it is ("run": the mode's label in its args), so Perfetto tells them apart:
// every mode has spans on the frontend and on the queue, and every span
// inside a mode's "run <label>" span on the frontend carries that label.
void the_trace_names_each_modes_spans(const Compare& c) {
  std::map<int, std::string> tracks;  // tid -> name
  for (const amlp::Json& e : c.trace.at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == "thread_name") tracks[e.at("tid").get<int>()] = e.at("args").at("name").get<std::string>();
  std::map<std::string, std::pair<uint64_t, uint64_t>> run_span;  // label -> [begin, end]
  std::map<std::string, std::map<std::string, int>> spans;         // label -> track kind -> count
  for (const amlp::Json& e : c.trace.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    ASSERT_TRUE(e.at("args").contains("run")) << json_text(e);
    const std::string label = e.at("args").at("run").get<std::string>();
    const std::string track = tracks[e.at("tid").get<int>()];
    ++spans[label][track.rfind("queue ", 0) == 0 ? "queue" : track.rfind("frontend", 0) == 0 ? "frontend" : track];
    if (e.at("name") == "run " + label) {
      const uint64_t b = e.at("ts").get<uint64_t>(), d = e.at("dur").get<uint64_t>();
      run_span[label] = {b, b + d};
    }
  }
  for (const auto& [label, r] : c.runs) {
    EXPECT_GT(spans[label]["frontend"], 0) << label;
    EXPECT_GT(spans[label]["queue"], 0) << label;
    EXPECT_TRUE(run_span.count(label)) << "no 'run " << label << "' span";
  }
  for (const amlp::Json& e : c.trace.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    const uint64_t ts = e.at("ts").get<uint64_t>();
    for (const auto& [label, span] : run_span)
      if (ts > span.first && ts < span.second) EXPECT_EQ(e.at("args").at("run"), label) << json_text(e);
  }
}

TEST(QuickCompare, ReproducesTheExperimentAndItsMemoryModel) {
  const std::string config = amlp::testing::source_file("configs/quick.ini");
  amlp::testing::ScratchDir dir;
  const std::string trace = dir.file("t.json");
  ParseOutcome p =
      parse_options(std::vector<std::string>{"--config", config, "--compare", "--device", "cpu", "--batches",
                                             kSanitized ? "24" : "50", "--trace", trace});
  ASSERT_EQ(p.status, ParseStatus::Run) << p.message;
  Compare c{p.options, "", {}, {}};
  std::ostringstream out, err;
  std::vector<RunResult> results;
  ASSERT_EQ(run_driver(p.options, out, err, &results), 0) << err.str();
  c.output = out.str();
  c.trace = amlp::testing::read_json(trace);
  for (const RunResult& r : results) c.runs[r.label()] = r;

  {
    SCOPED_TRACE("runs every mode");
    runs_every_mode(c);
  }
  {
    SCOPED_TRACE("prints the book's lines and the table");
    prints_the_books_lines_and_the_table(c);
  }
  {
    SCOPED_TRACE("unsynchronized backlog and memory are several times synchronized");
    unsynchronized_is_several_times_synchronized(c);
  }
  {
    SCOPED_TRACE("the memory model predicts the increase");
    memory_model_predicts_the_increase(c);
  }
  {
    SCOPED_TRACE("every mode reaches the same loss");
    every_mode_reaches_the_same_loss(c);
  }
  {
    SCOPED_TRACE("back-pressure keeps memory within its bound");
    back_pressure_keeps_memory_within_its_bound(c);
  }
  {
    SCOPED_TRACE("the trace names each mode's spans");
    the_trace_names_each_modes_spans(c);
  }
}

// The GPU kernel candidates (ASYNCMLP_CANDIDATES) train the CPU's run to
// the same loss, bit for bit, as the default (their CPU side is the
// default's arithmetic in fewer passes); an unknown name is one line, exit 2.
TEST(Candidates, TrainTheSameLossAsTheDefaultAndAnUnknownNameIsExitTwo) {
  const std::string args = " --device cpu --features 16 --hidden 32,8 --batch-size 64 --batches 5 --sync none";
  auto final_loss = [](const std::string& out) {
    const size_t at = out.find("final loss");
    return at == std::string::npos ? std::string("(none)") : out.substr(at, out.find('\n', at) - at);
  };
  using testing::program_path;
  using testing::Ran;
  using testing::run_command;
  const Ran plain = run_command(program_path("train_mlp") + args);
  const Ran with = run_command("env ASYNCMLP_CANDIDATES=all " + program_path("train_mlp") + args);
  ASSERT_EQ(plain.code, 0) << plain.err;
  ASSERT_EQ(with.code, 0) << with.err;
  EXPECT_NE(final_loss(plain.out), "(none)");
  EXPECT_EQ(final_loss(with.out), final_loss(plain.out));
  const Ran bad = run_command("env ASYNCMLP_CANDIDATES=out_gemv,bogus " + program_path("train_mlp") + args);
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err,
            "train_mlp: error: environment variable ASYNCMLP_CANDIDATES names 'bogus', not a candidate (out_gemv, "
            "out_grad, worker_spin, all)\n");
}

}  // namespace
}  // namespace amlp::train
