// test_predict.cpp — the models' arithmetic (train/predict/predict.h): the memory
// model's backlog × bytes per batch, its cap under back-pressure and the
// `run` policy's working set; the throughput model with the fresh-memory
// term taken out of the device's clock and added as a term of its own; the
// probe of what a fresh byte costs here.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "framework/json.h"

#include "train/predict/predict.h"
#include "train/train_test_util.h"

namespace amlp::train {
namespace {

RunResult one_device(AllocPolicy alloc, int backlog, size_t bytes_per_batch) {
  RunResult r;
  r.asked.options.alloc = alloc;
  r.measured.peak_backlog_batches = backlog;
  r.measured.per_device.push_back(DeviceResult{});
  r.measured.per_device[0].bytes_per_batch = bytes_per_batch;
  r.measured.bytes_per_batch = bytes_per_batch;
  return r;
}

TEST(MemoryModel, EnqueueIsTheBacklogTimesABatchCappedByBackPressure) {
  RunResult r = one_device(AllocPolicy::Enqueue, 57, 1000);
  EXPECT_EQ(predicted_increase(r), 57000u);
  r.asked.options.max_pending_bytes = 2500;
  r.measured.largest_tensor_bytes = 300;
  EXPECT_EQ(predicted_increase(r), 2800u);  // the bound + the op waiting to be queued
  r.predicted.increase_bytes = predicted_increase(r);
  EXPECT_EQ(memory_terms(r), "max-pending-bytes + one op's output");
}

TEST(MemoryModel, RunIsTheWorkingSetAndTheDataAheadOnTheFirstDevice) {
  RunResult r = one_device(AllocPolicy::Run, 100, 1000);
  r.measured.per_device.push_back(DeviceResult{});
  r.measured.per_device[0].working_set_bytes = 300;
  r.measured.per_device[1].working_set_bytes = 200;
  r.measured.peak_data_ahead_bytes = 50;
  EXPECT_EQ(predicted_increase(r, 0), 350u);
  EXPECT_EQ(predicted_increase(r, 1), 200u);
  EXPECT_EQ(predicted_increase(r), 550u);
}

TEST(ThroughputModel, WithoutFreshMemoryTheTermsAreHAndD) {
  const ThroughputTerms t{10, 1, 0.002, 0.003, 0, 0};
  EXPECT_DOUBLE_EQ(predicted_wall_s(t), predicted_wall_s(10, 1, 0.002, 0.003));
  EXPECT_DOUBLE_EQ(predicted_wall_s(t), 10 * 0.005);
  EXPECT_DOUBLE_EQ(fresh_s(t), 0.0);
  EXPECT_DOUBLE_EQ(resident_device_s(t), 0.003);
}

TEST(ThroughputModel, FreshMemoryIsATermOfItsOwnTakenOutOfTheDevicesClock) {
  constexpr double GiB = double(size_t(1) << 30);
  // none, 100 batches: d 9 ms measured, 0.5 GiB fresh at 1 s/GiB = 0.5 s,
  // so the device's time on resident memory is 9 - 5 = 4 ms a batch.
  const ThroughputTerms none{100, 100, 0.001, 0.009, size_t(1) << 29, 1.0 / GiB};
  EXPECT_DOUBLE_EQ(fresh_s(none), 0.5);
  EXPECT_NEAR(resident_device_s(none), 0.004, 1e-12);
  EXPECT_NEAR(predicted_wall_s(none), 100 * 0.004 + 0.001 + 0.5, 1e-12);
  // The frontend slower than the device on resident memory: h bounds the
  // batches, and the fresh memory still adds.
  const ThroughputTerms host_bound{100, 100, 0.006, 0.009, size_t(1) << 29, 1.0 / GiB};
  EXPECT_NEAR(predicted_wall_s(host_bound), 100 * 0.006 + 0.004 + 0.5, 1e-12);
  // A probe reading more than the device's whole clock: the fresh term is
  // the device's clock, and d on resident memory 0.
  const ThroughputTerms dear{10, 10, 0.001, 0.002, size_t(1) << 30, 1.0 / GiB};
  EXPECT_DOUBLE_EQ(fresh_s(dear), 10 * 0.002);
  EXPECT_DOUBLE_EQ(resident_device_s(dear), 0.0);
  EXPECT_NEAR(predicted_wall_s(dear), 10 * 0.001 + 10 * 0.002, 1e-12);
  EXPECT_DOUBLE_EQ(predicted_wall_s(ThroughputTerms{0, 1, 0.001, 0.002, size_t(1) << 30, 1.0 / GiB}), 0.0);
}

// Where the pool counted the worker's backing time, that time is the fresh
// term (the probe's price x bytes only without it), still within N·d.
TEST(ThroughputModel, AMeasuredFreshTimeReplacesTheProbesPrice) {
  constexpr double GiB = double(size_t(1) << 30);
  ThroughputTerms t{100, 100, 0.001, 0.009, size_t(1) << 29, 1.0 / GiB, 0.2};
  EXPECT_DOUBLE_EQ(fresh_s(t), 0.2);
  EXPECT_NEAR(resident_device_s(t), 0.007, 1e-12);
  EXPECT_NEAR(predicted_wall_s(t), 100 * 0.007 + 0.001 + 0.2, 1e-12);
  t.fresh_measured_s = 0;  // measured, and nothing was paid on the worker
  EXPECT_DOUBLE_EQ(fresh_s(t), 0.0);
  EXPECT_DOUBLE_EQ(resident_device_s(t), 0.009);
  t.fresh_measured_s = 5;  // never more than the device's clock
  EXPECT_DOUBLE_EQ(fresh_s(t), 100 * 0.009);
}

TEST(ThroughputModel, TheFormulaNamesTheFreshTermWhenItCounts) {
  RunResult r;
  r.measured.batches_done = 100;
  r.predicted.every = 100;
  EXPECT_EQ(throughput_terms(r), "100 x max(h, d) + min(h, d)");
  r.measured.fresh_bytes = 381000000;
  r.measured.fresh_s_per_gib = 1.84;
  EXPECT_EQ(throughput_terms(r), "100 x max(h, d) + min(h, d) + 381.0 MB fresh x 1.84 s/GiB");
  r.predicted.every = 10;
  r.measured.fresh_bytes = 0;
  EXPECT_EQ(throughput_terms(r), "100 x max(h, d) + 10 x min(h, d)");
  r.measured.fresh_counted = true;
  r.predicted.fresh_s = 0.25;
  EXPECT_EQ(throughput_terms(r), "100 x max(h, d) + 10 x min(h, d) + fresh 0.250 s (measured)");
}

TEST(FreshMemoryCost, IsMeasuredOnceAndPositive) {
  const double first = fresh_s_per_byte();
  EXPECT_GT(first, 0.0) << "MADV_POPULATE_WRITE (Linux 5.14) missing?";
  EXPECT_LT(first, 1e-6) << "over 1000 s per GiB";  // a sanity bound, not a timing
  EXPECT_EQ(fresh_s_per_byte(), first);
}

// d per batch taken apart in summary.json: kernels and fresh measured, the
// rest the remainder, all three adding up to d; the summary prints the line.
void expect_d_adds_up(const amlp::Json& run, const std::string& out) {
  ASSERT_TRUE(run.at("d_measured").get<bool>());
  const double d = run.at("device_s_per_batch").get<double>();
  const double kernels = run.at("d_kernels_s").get<double>(), fresh = run.at("d_fresh_s").get<double>();
  const double rest = run.at("d_rest_s").get<double>();
  EXPECT_GT(kernels, 0.0);
  EXPECT_GE(fresh, 0.0);
  EXPECT_GE(rest, 0.0) << "the measured terms exceed the queue's busy time they lie inside";
  EXPECT_NEAR(kernels + fresh + rest, d, 1e-9 * std::max(1.0, d));
  EXPECT_LE(kernels + fresh, d * (1 + 1e-9));
  EXPECT_NEAR(fresh * run.at("batches_done").get<int>(), run.at("fresh_worker_s").get<double>(), 1e-9)
      << "one device: its worker's backing time is the run's";
  EXPECT_GE(run.at("fresh_worker_s").get<double>(), run.at("fresh_worker_populate_s").get<double>());
  EXPECT_GE(run.at("fresh_populator_s").get<double>(), 0.0);
  EXPECT_NE(out.find("  d per batch         "), std::string::npos) << out;
  EXPECT_NE(out.find(" = kernels "), std::string::npos) << out;
}

// A synchronized run: its d taken apart adds up (little or no fresh memory).
TEST(ThroughputModel, ASynchronizedRunsDAddsUpFromItsMeasuredTerms) {
  amlp::testing::ScratchDir dir;
  const amlp::testing::Ran r = amlp::testing::run_train_mlp(
      "--device cpu --sync batch --batches 20 --batch-size 64 --features 64 --hidden 64 --quiet "
      "--summary-json " + dir.file("s.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  const amlp::Json s = amlp::testing::read_json(dir.file("s.json"));
  ASSERT_EQ(s.size(), 1u);
  expect_d_adds_up(s[0], r.out);
}

// An unsynchronized run that obtains far more than kFreshWorthMeasuring:
// the summary names the fresh memory and its cost as measured where the
// worker paid it, the JSON carries both, and the prediction holds the fresh
// term: the worker's backing time, part of d.
TEST(ThroughputModel, AnUnsynchronizedRunShowsItsFreshMemory) {
  amlp::testing::ScratchDir dir;
  const amlp::testing::Ran r = amlp::testing::run_train_mlp(
      "--device cpu --sync none --batches 40 --batch-size 256 --features 512 --hidden 512,128 --quiet "
      "--summary-json " + dir.file("s.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("  fresh memory        "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" s per GiB as measured"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("backed by the worker ("), std::string::npos) << r.out;
  const amlp::Json s = amlp::testing::read_json(dir.file("s.json"));
  ASSERT_EQ(s.size(), 1u);
  const size_t fresh = s[0].at("fresh_bytes").get<size_t>();
  EXPECT_GE(fresh, kFreshWorthMeasuring);
  EXPECT_LE(fresh, s[0].at("peak_bytes").get<size_t>() + (size_t(64) << 20));  // what the pool reserved
  const double per_gib = s[0].at("fresh_s_per_gib").get<double>();
  EXPECT_GT(per_gib, 0.0);
  EXPECT_TRUE(s[0].at("fresh_counted").get<bool>());
  EXPECT_GT(s[0].at("fresh_backed_bytes").get<uint64_t>() + s[0].at("fresh_populator_bytes").get<uint64_t>(), 0u);
  const double term = s[0].at("fresh_s").get<double>();  // 0 where the populator kept ahead of the worker
  EXPECT_GE(term, 0.0);
  EXPECT_NEAR(term, s[0].at("fresh_worker_s").get<double>(), 1e-9) << "the fresh term is the worker's measured time";
  EXPECT_GE(s[0].at("predicted_wall_s").get<double>(), term);
  expect_d_adds_up(s[0], r.out);
}

}  // namespace
}  // namespace amlp::train
