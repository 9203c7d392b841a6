// test_train_alloc.cpp — train_mlp's allocation policies (--alloc) and data
// queue (--data-queue) end to end: the memory model's prediction for each on
// small shapes (read back from --summary-json), the same final loss whatever
// the policy, and a run that runs out of memory as an op starts.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <stdexcept>
#include "framework/json.h"
#include <string>

#include "framework/runtime.h"
#include "train/options/options.h"
#include "train/plan/outputs.h"
#include "train/plan/plan.h"
#include "train/train_test_util.h"

namespace amlp::testing {
namespace {

// Small enough to run in a second, large enough that a batch's data (X: 256 KiB)
// and working set are many pool blocks.
const std::string kShape = "--device cpu --batch-size 256 --features 256 --hidden 256,64 --seed 3 ";

struct Policy {
  const char* name;
  const char* args;
};
const Policy kPolicies[] = {
    {"enqueue/none", "--alloc enqueue --sync none"},
    {"run/none", "--alloc run --sync none"},
    {"run+data-queue/none", "--alloc run --data-queue --sync none"},
    {"run/batch", "--alloc run --sync batch"},
    {"enqueue+data-queue/none", "--data-queue --sync none"},
    {"run+data-queue/bounded", "--alloc run --data-queue --sync none --max-pending-bytes 1MiB"},
    {"stream/none", "--alloc stream --sync none"},
    {"stream/batch", "--alloc stream --sync batch"},
};

// Each policy's run, made when a test first reads it and kept for the rest of
// the process: ctest runs each test in a process of its own, so a test pays
// for the policies it reads, not for all six.
class TrainAlloc : public ::testing::Test {
 protected:
  // `batches`: 30, for the memory figures; fewer where a test reads the loss alone.
  static const amlp::Json& run(const std::string& name, int batches = 30) {
    static std::map<std::string, amlp::Json> runs;
    const std::string key = name + "/" + std::to_string(batches);
    auto it = runs.find(key);
    if (it != runs.end()) return it->second;
    const Policy* p = nullptr;
    for (const Policy& q : kPolicies)
      if (name == q.name) p = &q;
    if (!p) throw std::invalid_argument("no policy " + name);
    ScratchDir dir;
    const Ran r = run_train_mlp(kShape + "--batches " + std::to_string(batches) + " " + p->args + " --summary-json " +
                                dir.file("s.json"));
    if (r.code != 0) throw std::runtime_error(name + ": exit " + std::to_string(r.code) + ": " + r.err);
    return runs[key] = read_json(dir.file("s.json")).at(0);
  }
  static double ratio(const amlp::Json& r) {
    return r.at("mem_increase_bytes").get<double>() / r.at("predicted_increase_bytes").get<double>();
  }
};

TEST_F(TrainAlloc, EnqueueHoldsEveryPendingBatch) {
  const amlp::Json& r = run("enqueue/none");
  EXPECT_EQ(r.at("alloc_policy"), "enqueue");
  EXPECT_EQ(r.at("predicted_increase_bytes").get<uint64_t>(),
            r.at("peak_backlog_batches").get<uint64_t>() * r.at("bytes_per_batch").get<uint64_t>());
  EXPECT_NEAR(ratio(r), 1.0, 0.10) << json_text(r);
}

// Queued work holds nothing: the increase is one batch's working set, less
// than what one batch allocates, however many batches are pending.
TEST_F(TrainAlloc, RunHoldsOneBatchsWorkingSet) {
  for (const char* name : {"run/none", "run/batch"}) {
    const amlp::Json& r = run(name);
    EXPECT_EQ(r.at("alloc_policy"), "run") << name;
    EXPECT_EQ(r.at("data_queue"), false) << name;
    EXPECT_EQ(r.at("peak_data_ahead_bytes"), 0) << name;
    EXPECT_EQ(r.at("predicted_increase_bytes"), r.at("working_set_bytes")) << name;
    EXPECT_GT(r.at("working_set_bytes").get<uint64_t>(), 0u) << name;
    EXPECT_LT(r.at("mem_increase_bytes").get<uint64_t>(), r.at("bytes_per_batch").get<uint64_t>()) << name;
    EXPECT_NEAR(ratio(r), 1.0, 0.10) << name << ": " << json_text(r);
  }
  // Unsynchronized, enqueue grows with the backlog and run does not.
  EXPECT_LT(run("run/none").at("mem_increase_bytes").get<uint64_t>() * 2,
            run("enqueue/none").at("mem_increase_bytes").get<uint64_t>());
}

// Stream-ordered reuse: each batch's dropped blocks serve the next batch's
// ops, however many batches are queued: one batch's allocations, synchronized
// or not, where enqueue holds the backlog's.
TEST_F(TrainAlloc, StreamHoldsOneBatchsAllocations) {
  for (const char* name : {"stream/none", "stream/batch"}) {
    const amlp::Json& r = run(name);
    EXPECT_EQ(r.at("alloc_policy"), "stream") << name;
    EXPECT_EQ(r.at("predicted_increase_bytes"), r.at("bytes_per_batch")) << name;
    EXPECT_NEAR(ratio(r), 1.0, 0.10) << name << ": " << json_text(r);
  }
  EXPECT_GT(run("stream/none").at("peak_backlog_batches").get<uint64_t>(), 1u) << "nothing was queued ahead";
  EXPECT_LT(run("stream/none").at("mem_increase_bytes").get<uint64_t>() * 4,
            run("enqueue/none").at("mem_increase_bytes").get<uint64_t>());
}

// With the data queue the data runs ahead: the increase is the data generated
// and not yet consumed at the peak, plus one batch's working set.
TEST_F(TrainAlloc, RunWithDataQueueHoldsTheDataAhead) {
  const amlp::Json& r = run("run+data-queue/none");
  EXPECT_EQ(r.at("data_queue"), true);
  const uint64_t data = r.at("data_bytes_per_batch").get<uint64_t>();
  EXPECT_EQ(data, pool_block_bytes(256 * 256 * sizeof(float)) + pool_block_bytes(256 * sizeof(float)));
  const uint64_t ahead = r.at("peak_data_ahead_bytes").get<uint64_t>();
  const double lead = r.at("peak_data_lead_batches").get<double>();
  EXPECT_DOUBLE_EQ(lead, double(ahead) / double(data));
  EXPECT_GE(lead, 1.0) << "the batch being trained holds its data";
  EXPECT_LE(lead, 30.0) << "no more data than the run's batches";
  EXPECT_EQ(r.at("predicted_increase_bytes").get<uint64_t>(), r.at("working_set_bytes").get<uint64_t>() + ahead);
  EXPECT_NEAR(ratio(r), 1.0, 0.10) << json_text(r);
}

// Back-pressure by bytes counts the outputs queued ops will allocate, so it
// bounds the data the loader can run ahead: at most the bound plus the one
// op a queue always takes (here, a batch's data).
TEST_F(TrainAlloc, BackPressureBoundsTheDataAhead) {
  const amlp::Json& r = run("run+data-queue/bounded");
  EXPECT_EQ(r.at("max_pending_bytes"), 1u << 20);
  EXPECT_LE(r.at("peak_data_ahead_bytes").get<uint64_t>(), (1u << 20) + r.at("data_bytes_per_batch").get<uint64_t>());
}

// Same seed, same numbers: where and when memory is allocated changes nothing
// (read after 10 batches: the loss needs no more; the memory tests read 30).
TEST_F(TrainAlloc, FinalLossIsTheSameUnderEveryPolicy) {
  const double loss = run("enqueue/none", 10).at("final_loss").get<double>();
  for (const Policy& p : kPolicies) EXPECT_EQ(run(p.name, 10).at("final_loss").get<double>(), loss) << p.name;
}

TEST_F(TrainAlloc, SummaryNamesThePolicyAndTheModelsTerms) {
  const Ran r = run_train_mlp(kShape + "--batches 4 --alloc run --data-queue --sync none");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("allocation          run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("on the data queue"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("= working set "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("of data ahead"), std::string::npos) << r.out;
}

// Under run an allocation fails on the worker as the op starts: the run fails
// at the next blocker with exit 1 and one line naming out of memory and the op.
TEST(TrainAllocFailure, OutOfMemoryAsAnOpStartsFailsTheRun) {
  const Ran r = run_train_mlp(
      "--device cpu --alloc run --sync none --batches 3 --batch-size 8192 --features 32 --hidden 64 "
      "--memory-limit 3MiB");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_NE(r.err.find("train_mlp: error: run 'none' failed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("out of memory on cpu:0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("as it started (allocation policy run)"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace amlp::testing

namespace amlp::testing {
namespace {

// --compare-policies: every policy unsynchronized, one memory log each, one
// summary object each, one table; the same final loss under every policy;
// enqueue holds the backlog, run only a working set, run+data the data ahead.
TEST(TrainComparePolicies, OneTableOneLogAndOneSummaryPerPolicy) {
  ScratchDir dir;
  const Ran r = run_train_mlp(kShape + "--batches 20 --sync batch --compare-policies --memory-log " +
                              dir.file("m.csv") + " --summary-json " + dir.file("s.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("unsynchronized\npolicy    behaves like"), std::string::npos) << r.out;
  const amlp::Json s = read_json(dir.file("s.json"));
  ASSERT_EQ(s.size(), 4u);
  const char* labels[] = {"enqueue", "run", "run+data", "stream"};
  const char* policies[] = {"enqueue", "run", "run", "stream"};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(s[i].at("label"), labels[i]);
    EXPECT_EQ(s[i].at("mode"), "none") << "--sync batch is ignored: the policies differ unsynchronized";
    EXPECT_EQ(s[i].at("alloc_policy"), policies[i]);
    EXPECT_EQ(s[i].at("data_queue"), i == 2);
    EXPECT_EQ(s[i].at("final_loss").get<double>(), s[0].at("final_loss").get<double>()) << labels[i];
    EXPECT_EQ(read_csv_strict(amlp::train::tagged_path(dir.file("m.csv"), labels[i])).rows.size(), 20u) << labels[i];
    const std::string row_start = std::string(labels[i]) + std::string(10 - std::strlen(labels[i]), ' ');
    EXPECT_NE(r.out.find("\n" + row_start), std::string::npos) << labels[i] << " has no row: " << r.out;
  }
  const double enq = s[0].at("mem_increase_bytes").get<double>(), run = s[1].at("mem_increase_bytes").get<double>(),
               data = s[2].at("mem_increase_bytes").get<double>();
  EXPECT_GT(enq, 4 * run) << "enqueue holds the backlog, run one working set";
  EXPECT_GT(data, run) << "the data queue's run-ahead holds the data of the batches ahead";
  const double stream = s[3].at("mem_increase_bytes").get<double>();
  EXPECT_GT(enq, 4 * stream) << "stream reuses one batch's blocks";
  EXPECT_NEAR(stream / s[3].at("predicted_increase_bytes").get<double>(), 1.0, 0.10);
}

}  // namespace
}  // namespace amlp::testing
