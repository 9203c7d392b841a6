// test_train_devices.cpp — train_mlp --devices end to end (the real binary):
// the losses of cpu:0 + cpu:1 follow cpu:0 alone, the memory log gains each
// device's columns, the summary each device's memory against its own
// prediction, the trace each device's queue with its all-reduce ops, --compare
// runs every mode, and bad device lists are one line and exit 2.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "train/train_test_util.h"

namespace amlp::testing {
namespace {

const std::string kSmall = " --batches 20 --batch-size 64 --features 16 --hidden 32,16 --lr 0.05";

std::vector<double> losses(const CsvRows& csv) {
  std::vector<double> out;
  for (size_t i = 0; i < csv.rows.size(); ++i) out.push_back(std::stod(csv.field(i, "loss")));
  return out;
}

TEST(TrainMlpDevices, TwoCpuDevicesGiveOneDevicesLossesWithin1e5) {
  ScratchDir dir;
  Ran one = run_train_mlp("--device cpu --sync batch" + kSmall + " --memory-log " + dir.file("one.csv"));
  ASSERT_EQ(one.code, 0) << one.err;
  Ran two = run_train_mlp("--devices cpu:0,cpu:1 --sync batch" + kSmall + " --memory-log " + dir.file("two.csv"));
  ASSERT_EQ(two.code, 0) << two.err;
  const CsvRows a = read_csv_strict(dir.file("one.csv")), b = read_csv_strict(dir.file("two.csv"));
  ASSERT_EQ(a.problem, "");
  ASSERT_EQ(b.problem, "");
  const std::vector<double> la = losses(a), lb = losses(b);
  ASSERT_EQ(la.size(), 20u);
  ASSERT_EQ(lb.size(), 20u);
  for (size_t i = 0; i < la.size(); ++i)
    EXPECT_LE(std::abs(la[i] - lb[i]), 1e-5 * std::abs(la[i])) << "batch " << i + 1 << ": " << la[i] << " vs " << lb[i];
  EXPECT_LT(la.back(), la.front());
  EXPECT_NE(two.out.find("cpu:0,cpu:1 (data parallel"), std::string::npos) << two.out;
}

TEST(TrainMlpDevices, MemoryLogSummaryAndTraceShowEachDevice) {
  ScratchDir dir;
  Ran r = run_train_mlp("--devices cpu:0,cpu:1 --sync none" + kSmall + " --memory-log " + dir.file("m.csv") +
                        " --summary-json " + dir.file("s.json") + " --trace " + dir.file("t.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  // The memory log: the usual columns (the devices' sums) and three per device.
  const CsvRows csv = read_csv_strict(dir.file("m.csv"));
  ASSERT_EQ(csv.problem, "");
  ASSERT_EQ(csv.rows.size(), 20u);
  for (const char* c : {"queue_depth_cpu0", "bytes_in_use_cpu0", "backlog_batches_cpu0", "queue_depth_cpu1",
                        "bytes_in_use_cpu1", "backlog_batches_cpu1"})
    EXPECT_NE(std::find(csv.header.begin(), csv.header.end(), c), csv.header.end()) << c;
  for (size_t i = 0; i < csv.rows.size(); ++i) {
    const long long b0 = std::stoll(csv.field(i, "bytes_in_use_cpu0")), b1 = std::stoll(csv.field(i, "bytes_in_use_cpu1"));
    EXPECT_GT(b1, 0) << "cpu:1 holds its replica";
    EXPECT_EQ(std::stoll(csv.field(i, "bytes_in_use")), b0 + b1) << "row " << i + 1;
    EXPECT_EQ(std::stoll(csv.field(i, "queue_depth")),
              std::stoll(csv.field(i, "queue_depth_cpu0")) + std::stoll(csv.field(i, "queue_depth_cpu1")));
  }
  // The summary: each device, its rows, its increase and its prediction; the run's are their sums.
  const amlp::Json s = read_json(dir.file("s.json"));
  ASSERT_EQ(s.size(), 1u);
  const amlp::Json& run = s[0];
  EXPECT_EQ(run.at("device"), "cpu:0,cpu:1");
  EXPECT_EQ(run.at("data_parallel"), true);
  EXPECT_GE(run.at("blas_threads").get<int>(), 1);
  const amlp::Json& devs = run.at("devices");
  ASSERT_EQ(devs.size(), 2u);
  uint64_t inc = 0, pred = 0;
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(devs[i].at("device"), "cpu:" + std::to_string(i));
    EXPECT_EQ(devs[i].at("rows_per_batch"), 32);
    EXPECT_GT(devs[i].at("bytes_per_batch").get<uint64_t>(), 0u);
    EXPECT_GT(devs[i].at("predicted_increase_bytes").get<uint64_t>(), 0u);
    // Each device's increase within its own prediction (the model's upper bound).
    EXPECT_LE(devs[i].at("mem_increase_bytes").get<uint64_t>(), devs[i].at("predicted_increase_bytes").get<uint64_t>());
    inc += devs[i].at("mem_increase_bytes").get<uint64_t>();
    pred += devs[i].at("predicted_increase_bytes").get<uint64_t>();
  }
  EXPECT_EQ(run.at("mem_increase_bytes").get<uint64_t>(), inc);
  EXPECT_EQ(run.at("predicted_increase_bytes").get<uint64_t>(), pred);
  // The trace: a queue track per device, the all-reduce ops on each.
  const amlp::Json t = read_json(dir.file("t.json"));
  std::map<int, std::string> tracks;
  std::map<std::string, int> all_reduces;
  for (const amlp::Json& e : t.at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == "thread_name")
      tracks[e.at("tid").get<int>()] = e.at("args").at("name").get<std::string>();
  for (const amlp::Json& e : t.at("traceEvents"))
    if (e.at("ph") == "X" && e.at("name") == "all_reduce") all_reduces[tracks[e.at("tid").get<int>()]]++;
  // Six parameters (three Dense layers), 20 batches, on each queue.
  EXPECT_EQ(all_reduces["queue cpu:0"], 6 * 20);
  EXPECT_EQ(all_reduces["queue cpu:1"], 6 * 20);
  EXPECT_NE(r.out.find("  cpu:1"), std::string::npos) << r.out;
}

TEST(TrainMlpDevices, CompareRunsEveryModeOnSeveralDevices) {
  Ran r = run_train_mlp("--devices cpu:0,cpu:1 --compare --batches 6 --batch-size 33 --features 8 --hidden 8");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s : {"== batch", "== none", "== every=2", "== bounded", "per device (data parallel)"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  // An uneven split: 17 rows on cpu:0, 16 on cpu:1.
  EXPECT_NE(r.out.find("cpu:0        17"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cpu:1        16"), std::string::npos) << r.out;
}

TEST(TrainMlpDevices, BadDeviceListsAreOneLineAndExit2) {
  for (const std::string& args :
       {std::string("--devices cpu:0,cpu:0"), std::string("--devices cpu:0,tpu:1"), std::string("--devices cpu:0,"),
        std::string("--devices auto,cpu:1"), std::string("--devices cpu:0,cuda:0"),
        std::string("--devices cpu:0,cpu:1,cpu:2 --batch-size 2"), std::string("--devices cpu:0,cpu:99999")}) {
    SCOPED_TRACE(args);
    Ran r = run_train_mlp(args + " --batches 1");
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("train_mlp: error: --devices", 0), 0u) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

}  // namespace
}  // namespace amlp::testing
