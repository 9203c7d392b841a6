// Covers train/driver.cpp (the trace, then the summary, each marked with how the program ends).
// test_train_exit_status.cpp — the summary and the trace agree with the exit
// status: an output that cannot be written once the run is done (a full
// device, which no up-front check can see) fails the program, exit 1, and
// the other output says "failed" with that line — never "completed".
#include <gtest/gtest.h>

#include "train/train_test_util.h"

namespace amlp::train {
namespace {

using amlp::testing::Ran;
using amlp::testing::read_json;
using amlp::testing::run_train_mlp;
using amlp::testing::ScratchDir;

const char* kRun = "--device cpu --quiet --batches 3 --batch-size 64 --features 32 --hidden 32 ";

// The trace fails after the run: the summary, written after it, records the failure.
TEST(ExitStatus, TraceThatFailsMarksTheSummaryFailed) {
  ScratchDir dir;
  std::string why;
  const std::string full = amlp::testing::make_full_device(dir, &why);
  if (full.empty()) GTEST_SKIP() << why;
  const std::string summary = dir.file("s.json");
  const Ran r = run_train_mlp(std::string(kRun) + "--trace " + full + " --summary-json " + summary);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  const amlp::Json s = read_json(summary);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].at("status"), "failed");
  EXPECT_EQ(s[0].at("failed"), true);
  EXPECT_NE(s[0].at("error").get<std::string>().find("No space left on device"), std::string::npos);
  EXPECT_EQ(s[0].at("batches_done"), 3) << "what the run did is kept";
}

// The summary fails after the trace was written: the trace is written again, marked failed.
TEST(ExitStatus, SummaryThatFailsMarksTheTraceFailed) {
  ScratchDir dir;
  std::string why;
  const std::string full = amlp::testing::make_full_device(dir, &why);
  if (full.empty()) GTEST_SKIP() << why;
  const std::string trace = dir.file("t.json");
  const Ran r = run_train_mlp(std::string(kRun) + "--trace " + trace + " --summary-json " + full);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  const amlp::Json t = read_json(trace);
  EXPECT_EQ(t.at("otherData").at("status"), "failed");
  EXPECT_NE(t.at("otherData").at("error").get<std::string>().find("No space left on device"), std::string::npos);
  EXPECT_TRUE(amlp::testing::temporaries_of(trace).empty());
}

// Both fine: both say completed, exit 0 (the agreement is not a failure of its own).
TEST(ExitStatus, CompletedRunSaysCompletedEverywhere) {
  ScratchDir dir;
  const std::string trace = dir.file("t.json"), summary = dir.file("s.json");
  const Ran r = run_train_mlp(std::string(kRun) + "--trace " + trace + " --summary-json " + summary);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_json(summary).at(0).at("status"), "completed");
  EXPECT_EQ(read_json(trace).at("otherData").at("status"), "completed");
}

}  // namespace
}  // namespace amlp::train
