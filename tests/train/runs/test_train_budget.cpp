// test_train_budget.cpp — train_mlp under a host memory budget (docs/design.md §3):
// a run that would outgrow the machine fails with one line and exit 1, fast,
// instead of being killed by the OS; its memory log, summary and trace stay
// whole and say why; the same process can run a smaller experiment after.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "framework/asyncmlp.h"
#include "train/driver.h"
#include "train/runs/experiment.h"
#include "train/options/options.h"
#include "train/train_test_util.h"

namespace amlp::train {
namespace {

using amlp::testing::CsvRows;
using amlp::testing::Ran;
using amlp::testing::read_csv_strict;
using amlp::testing::read_json;
using amlp::testing::run_train_mlp;
using amlp::testing::ScratchDir;
using amlp::testing::source_file;

Options options(const std::string& args) {
  std::vector<std::string> words;
  std::istringstream in(args);
  for (std::string w; in >> w;) words.push_back(w);
  ParseOutcome p = parse_options(words);
  EXPECT_EQ(p.status, ParseStatus::Run) << p.message;
  return p.options;
}

// In one process: a run past the pool's limit fails cleanly (RunFailed with
// what it measured, nothing left in use), then a smaller run succeeds.
TEST(Budget, ARunPastTheLimitFailsAndALaterSmallerRunSucceeds) {
  const Device d = Device::cpu(0);
  const MemoryBudget before = memory_limit(d);
  set_memory_limit(d, size_t(16) << 20, "a test's limit");
  const size_t in_use = memory_stats(d).bytes_in_use;
  const RunSpec big{options("--device cpu --sync none --batches 50 --batch-size 512 --features 256 --hidden 256"), "none"};
  std::ostringstream out;
  try {
    run_experiment(big, out);
    ADD_FAILURE() << "a run needing far more than 16 MiB succeeded";
  } catch (const RunFailed& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("run 'none' failed at batch "), std::string::npos) << w;
    EXPECT_NE(w.find("out of memory on cpu:0"), std::string::npos) << w;
    EXPECT_NE(w.find("a test's limit"), std::string::npos) << w;
    EXPECT_EQ(e.partial.measured.status, RunStatus::Failed);
    EXPECT_EQ(e.partial.measured.error, w);
    EXPECT_GE(e.partial.measured.batches_done, 1);
    EXPECT_LT(e.partial.measured.batches_done, 50);
    EXPECT_EQ(e.partial.measured.memory_limit_bytes, size_t(16) << 20);
    EXPECT_LE(e.partial.measured.peak_bytes, size_t(16) << 20);
  }
  waitall();
  EXPECT_EQ(memory_stats(d).bytes_in_use, in_use) << "the failed run left buffers in use";
  const RunSpec small{options("--device cpu --sync none --batches 5 --batch-size 32 --features 16 --hidden 16"), "none"};
  const RunResult r = run_experiment(small, out);
  EXPECT_EQ(r.measured.status, RunStatus::Completed);
  EXPECT_EQ(r.measured.batches_done, 5);
  EXPECT_TRUE(std::isfinite(r.measured.final_loss));
  set_memory_limit(d, before.bytes, before.source);
}

// The machine's budget, not the OS: a first activation (batch x the first
// hidden width x 4 bytes) twice the host's budget, as this process reads it,
// fails as it is allocated, before any of the batch's work runs (the input,
// one feature per sample, is small). Exit 1 at batch 1 and one line naming the
// figures, whatever the machine's memory: the width follows the budget.
TEST(Budget, AHugeBatchFailsWithOneLineInsteadOfAKill) {
  ScratchDir dir;
  const size_t budget = host_memory_budget().bytes;
  ASSERT_GT(budget, 0u);
  constexpr size_t kBatch = 1000000;
  const size_t width = std::min<size_t>(2 * budget / (kBatch * sizeof(float)) + 1, size_t(1) << 20);
  ASSERT_GT(kBatch * width * sizeof(float), budget) << "a budget past 4 TiB: the widest layer fits";
  Ran r = run_train_mlp("--device cpu --batch-size " + std::to_string(kBatch) + " --features 1 --hidden " +
                        std::to_string(width) + ",1 --batches 3 --sync none --summary-json " + dir.file("s.json"));
  EXPECT_EQ(r.code, 1) << r.err;
  ASSERT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("train_mlp: error: run 'none' failed at batch 1 of 3: out of memory on cpu:0: requested ", 0),
            0u)
      << r.err;
  for (const char* part : {"bytes in use", "reserved", "past the limit of", "--batch-size", "--memory-limit"})
    EXPECT_NE(r.err.find(part), std::string::npos) << part << " not in: " << r.err;
  const amlp::Json s = read_json(dir.file("s.json"));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].at("status"), "failed");
  EXPECT_EQ(s[0].at("batches_done"), 0);
  EXPECT_GT(s[0].at("memory_limit_bytes").get<size_t>(), 0u);
  const std::string source = s[0].at("memory_limit_source").get<std::string>();
  EXPECT_TRUE(source.find("MemAvailable") != std::string::npos || source.find("cgroup") != std::string::npos) << source;
}

// The book's model unsynchronized for 1000 batches under 200 MiB: out of
// memory after a few batches; every row written is whole; the summary and
// the trace are written, marked failed with the reason.
TEST(Budget, ALongUnsynchronizedRunUnderASmallLimitKeepsItsLogs) {
  ScratchDir dir;
  Ran r = run_train_mlp("--config " + source_file("configs/d2l.ini") +
                        " --device cpu --sync none --batches 1000 --memory-limit 200MiB --memory-log " +
                        dir.file("m.csv") + " --summary-json " + dir.file("s.json") + " --trace " + dir.file("t.json"));
  EXPECT_EQ(r.code, 1) << r.err;
  ASSERT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_NE(r.err.find("out of memory on cpu:0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("past the limit of 209715200 bytes (200 MiB, --memory-limit"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--max-pending-bytes"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--sync every=K"), std::string::npos) << r.err;
  const CsvRows log = read_csv_strict(dir.file("m.csv"));
  EXPECT_EQ(log.problem, "");
  ASSERT_GE(log.rows.size(), 1u);
  ASSERT_LT(log.rows.size(), 1000u);
  for (size_t i = 0; i < log.rows.size(); ++i)
    EXPECT_LE(std::stoull(log.field(i, "reserved_bytes")), size_t(200) << 20) << "row " << i + 1;
  EXPECT_NE(r.err.find("at batch " + std::to_string(log.rows.size() + 1) + " of 1000"), std::string::npos) << r.err;
  const amlp::Json s = read_json(dir.file("s.json"));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].at("failed"), true);
  EXPECT_EQ(s[0].at("status"), "failed");
  EXPECT_NE(s[0].at("error").get<std::string>().find("out of memory"), std::string::npos);
  EXPECT_EQ(s[0].at("batches_done").get<size_t>(), log.rows.size());
  EXPECT_EQ(s[0].at("memory_limit_bytes"), size_t(200) << 20);
  EXPECT_EQ(s[0].at("memory_limit_source"), "--memory-limit");
  EXPECT_GT(s[0].at("mem_increase_bytes").get<size_t>(), 0u);
  const amlp::Json t = read_json(dir.file("t.json"));
  EXPECT_EQ(t.at("otherData").at("status"), "failed");
  EXPECT_GT(t.at("traceEvents").size(), 10u);
}

// --memory-limit none lifts the budget (the summary says so); the default is
// the machine's.
TEST(Budget, MemoryLimitNoneIsAcceptedAndTheDefaultIsTheMachines) {
  ScratchDir dir;
  const std::string run = "--device cpu --sync none --batches 3 --batch-size 16 --features 8 --hidden 8 --summary-json ";
  Ran none = run_train_mlp(run + dir.file("none.json") + " --memory-limit none");
  ASSERT_EQ(none.code, 0) << none.err;
  amlp::Json s = read_json(dir.file("none.json"));
  EXPECT_TRUE(s[0].at("memory_limit_bytes").is_null());
  EXPECT_EQ(s[0].at("memory_limit_source"), "none");
  EXPECT_EQ(s[0].at("status"), "completed");
  EXPECT_EQ(s[0].at("interrupted"), false);
  Ran dflt = run_train_mlp(run + dir.file("auto.json"));
  ASSERT_EQ(dflt.code, 0) << dflt.err;
  s = read_json(dir.file("auto.json"));
  // Read by that process at its start: MemAvailable moves, so the figure is
  // this process's only roughly; where it came from is the same.
  const size_t budget = s[0].at("memory_limit_bytes").get<size_t>();
  EXPECT_GT(budget, 0u);
  EXPECT_LT(budget, size_t(::sysconf(_SC_PHYS_PAGES)) * size_t(::sysconf(_SC_PAGESIZE)));
  EXPECT_EQ(s[0].at("memory_limit_source"), host_memory_budget().source);
  Ran set = run_train_mlp(run + dir.file("set.json") + " --memory-limit 64MiB");
  ASSERT_EQ(set.code, 0) << set.err;
  EXPECT_EQ(read_json(dir.file("set.json"))[0].at("memory_limit_bytes"), size_t(64) << 20);
}

TEST(Budget, BadMemoryLimitsExit2WithOneLine) {
  for (const char* bad : {"--memory-limit lots", "--memory-limit -5", "--memory-limit 1.5", "--memory-limit Auto",
                          "--memory-limit 2048TiB", "--memory-limit"}) {
    Ran r = run_train_mlp(std::string(bad) + " --batches 1");
    EXPECT_EQ(r.code, 2) << bad << ": " << r.err;
    EXPECT_EQ(r.err_lines(), 1u) << r.err;
    EXPECT_NE(r.err.find("memory-limit"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace amlp::train
