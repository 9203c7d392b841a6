// test_live_status.cpp — the run-ahead shown live (train/runs/live_status.h): off a
// terminal, one whole status line on stderr every --status-every seconds with
// the batches queued and finished, the backlog, memory against its
// prediction and the budget, and samples/s; --quiet (or `quiet = true` in the
// INI file) prints none; stdout, the book's lines among it, stays as it is.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "train/runs/live_status.h"
#include "train/train_test_util.h"

namespace amlp::train {
namespace {

using amlp::testing::Ran;
using amlp::testing::run_train_mlp;
using amlp::testing::ScratchDir;
using amlp::testing::split_lines;

// A run of about half a second whatever the machine: the frontend's 2 ms of
// host work per batch bounds it from below.
const std::string kRun = "--device cpu --sync batch --batches 200 --batch-size 32 --features 16 --hidden 16 --host-work 2ms";

TEST(LiveStatus, TheLineNamesEveryFigure) {
  LiveFigures f;
  f.label = "none";
  f.queued = 37;
  f.batches = 100;
  f.finished = 12;
  f.backlog_batches = 25;
  f.backlog_bytes = 95300000;
  f.in_use_bytes = 120100000;
  f.predicted_bytes = 95000000;
  f.budget_bytes = 7200000000;
  f.samples_per_s = 4470.4;
  EXPECT_EQ(live_line(f),
            "none: 37/100 batches queued, 12 finished | backlog 25 batches, 95.3 MB | memory +120.1 MB (predicted "
            "95.0 MB, budget 7200.0 MB) | 4470 samples/s");
  f.predicted_bytes = 0;
  f.budget_bytes = 0;
  f.backlog_batches = 1;
  EXPECT_EQ(live_line(f), "none: 37/100 batches queued, 12 finished | backlog 1 batch, 95.3 MB | memory +120.1 MB "
                          "(budget none) | 4470 samples/s");
  f.epochs = 3;  // --epochs: the epoch being queued first
  f.epoch = 2;
  f.batches = 300;
  EXPECT_EQ(live_line(f), "none: epoch 2/3, 37/300 batches queued, 12 finished | backlog 1 batch, 95.3 MB | memory "
                          "+120.1 MB (budget none) | 4470 samples/s");
}

TEST(LiveStatus, OffATerminalAWholeLineEveryPeriodOnStderr) {
  const Ran r = run_train_mlp(kRun + " --status-every 0.05");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<std::string> lines = split_lines(r.err);
  ASSERT_GE(lines.size(), 2u) << r.err;
  const std::regex line(
      R"(^batch: \d+/200 batches queued, \d+ finished \| backlog \d+ batch(es)?, [0-9.]+ MB \| memory \+[0-9.]+ MB )"
      R"(\((predicted [0-9.]+ MB, )?budget ([0-9.]+ MB|none)\) \| \d+ samples/s$)");
  for (const std::string& l : lines) EXPECT_TRUE(std::regex_match(l, line)) << l;
  EXPECT_EQ(r.out.find("batches queued,"), std::string::npos) << "the status line went to stdout";
}

TEST(LiveStatus, QuietPrintsNoneFromTheCommandLineOrTheConfig) {
  const Ran r = run_train_mlp(kRun + " --status-every 0.01 --quiet");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  ScratchDir dir;
  const Ran c = run_train_mlp(kRun + " --status-every 0.01 --config " + dir.write("q.ini", "quiet = true\n"));
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(c.err, "");
}

TEST(LiveStatus, TheBooksLinesStayAsTheyAre) {
  const Ran shown = run_train_mlp(kRun + " --status-every 0.02");
  const Ran quiet = run_train_mlp(kRun + " --quiet");
  ASSERT_EQ(shown.code, 0) << shown.err;
  ASSERT_EQ(quiet.code, 0) << quiet.err;
  // The same lines in the same order: the book's lines with only the measured
  // numbers differing, the summary's by their labels. (A summary line a
  // measurement adds, "fresh memory" when the populator backed memory during
  // the run, and such a line's clauses, may come in one run and not the other.)
  const std::regex number(R"([0-9]+(\.[0-9]+)?)"), label(R"(^  (\S+( \S+)*)  .*$)");
  const auto shape = [&](const std::string& out) {
    std::vector<std::string> kept;
    for (const std::string& l : split_lines(out)) {
      const std::string s = std::regex_replace(l, label, "  $1");
      if (s != "  fresh memory") kept.push_back(std::regex_replace(s, number, "#"));
    }
    return kept;
  };
  const std::vector<std::string> a = shape(shown.out), b = shape(quiet.out);
  EXPECT_EQ(a, b) << shown.out << "\n---\n" << quiet.out;
  EXPECT_GE(a.size(), 10u) << shown.out;
  const std::regex book(R"(^batch (100|200), time [0-9]+\.[0-9]{4} sec$)");
  int book_lines = 0;
  for (const std::string& l : split_lines(shown.out)) book_lines += std::regex_match(l, book);
  EXPECT_EQ(book_lines, 2) << shown.out;
}

TEST(LiveStatus, BadPeriodsAreOneLineAndExitTwo) {
  for (const char* bad : {"0", "-1", "x", "1e9"}) {
    const Ran r = run_train_mlp(std::string("--status-every ") + bad);
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_EQ(r.err_lines(), 1u) << r.err;
    EXPECT_NE(r.err.find("--status-every"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace amlp::train
