// test_host_work.cpp — --host-work: the frontend's per-batch work (waiting
// and computing forms), the throughput model's arithmetic, and a run whose
// host work dominates, predicted by the model and reported in the summary.
#include <gtest/gtest.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include "framework/json.h"
#include <thread>

#include "train/options/host_work.h"
#include "train/options/options.h"
#include "train/predict/predict.h"
#include "train/train_test_util.h"

namespace amlp::train {
namespace {

using testing::Ran;
using testing::read_json;
using testing::run_train_mlp;
using testing::ScratchDir;

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

double wall_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

TEST(HostWork, ParsesDurationsMatchAndKinds) {
  EXPECT_EQ(parse_host_work("0").ns, 0);
  EXPECT_EQ(parse_host_work("2ms").ns, 2000000);
  EXPECT_EQ(parse_host_work("250us").ns, 250000);
  EXPECT_FALSE(parse_host_work("2ms").match_device);
  EXPECT_TRUE(parse_host_work("match").match_device);
  EXPECT_EQ(parse_host_work_kind("wait"), HostWorkKind::Wait);
  EXPECT_EQ(parse_host_work_kind("compute"), HostWorkKind::Compute);
  EXPECT_EQ(to_string(HostWorkKind::Compute), "compute");
  const ParseOutcome p = parse_options({"--host-work", "3ms", "--host-work-kind", "compute"});
  ASSERT_EQ(p.status, ParseStatus::Run) << p.message;
  EXPECT_EQ(p.options.host_work.ns, 3000000);
  EXPECT_EQ(p.options.host_work.kind, HostWorkKind::Compute);
  const ParseOutcome d = parse_options(std::vector<std::string>{});
  EXPECT_EQ(d.options.host_work.ns, 0);
  EXPECT_EQ(d.options.host_work.kind, HostWorkKind::Wait);
}

// The share of a core this thread got over `seconds` of `work`: its CPU
// time over the wall time.
template <class Work>
double busy_share(Work work, double* wall_out = nullptr) {
  const double w0 = wall_s(), c0 = thread_cpu_s();
  work();
  const double wall = wall_s() - w0;
  if (wall_out) *wall_out = wall;
  return (thread_cpu_s() - c0) / wall;
}

// Waiting leaves the core idle; computing keeps it busy. Each lasts at least
// the time asked for. How busy is measured against a plain spin of the same
// length just before, in the same conditions: a loaded machine (or a
// sanitizer build beside another build) gives any spinning thread a small
// share of a core (0.23 was seen), so computing must get at least half the
// spin's share and waiting at most half of it. Up to five tries, the
// machine's load being what it is.
TEST(HostWork, WaitSleepsAndComputeSpins) {
  double spin = 0, compute = 0, wait = 0;
  bool told_apart = false;
  for (int attempt = 0; attempt < 5 && !told_apart; ++attempt) {
    spin = busy_share([] {
      const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(40);
      volatile uint64_t x = 1;
      while (std::chrono::steady_clock::now() < end) x = x * 6364136223846793005ull + 1;
    });
    double compute_wall = 0, wait_wall = 0;
    compute = busy_share([] { do_host_work(HostWork{40000000, HostWorkKind::Compute, false}); }, &compute_wall);
    wait = busy_share([] { do_host_work(HostWork{40000000, HostWorkKind::Wait, false}); }, &wait_wall);
    EXPECT_GE(compute_wall, 0.040);
    EXPECT_GE(wait_wall, 0.040);
    told_apart = spin > 0.05 && compute >= 0.5 * spin && wait <= 0.5 * spin;
  }
  EXPECT_TRUE(told_apart) << "a core's share: a plain spin " << spin << ", computing " << compute << ", waiting " << wait;
  const double w0 = wall_s();
  do_host_work(HostWork{});  // none: returns at once
  EXPECT_LT(wall_s() - w0, 0.1);  // far under any work asked for; a loaded machine may stall it a few ms
}

// A stop flag (what a signal handler sets) cuts a minute of host work short:
// set from another thread 100 ms in, either kind returns false well within
// 20 s (a bound for a loaded machine, not a timing check); unset, it does
// the work in full and returns true.
TEST(HostWork, StopFlagCutsItShort) {
  for (HostWorkKind kind : {HostWorkKind::Wait, HostWorkKind::Compute}) {
    std::atomic<int> stop{0};
    const double w0 = wall_s();  // before the signaller's 100 ms begin: the flag is set no sooner than w0 + 0.1
    std::thread signaller([&stop] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      stop = 2;  // SIGINT's number, as the handler stores it
    });
    const bool done = do_host_work(HostWork{kMaxHostWorkNs, kind, false}, &stop);
    const double wall = wall_s() - w0;
    signaller.join();
    EXPECT_FALSE(done) << to_string(kind);
    EXPECT_LT(wall, 20.0) << to_string(kind) << ": a minute of host work did not stop";
    EXPECT_GE(wall, 0.1) << to_string(kind) << ": returned before the flag was set";
    std::atomic<int> never{0};
    EXPECT_TRUE(do_host_work(HostWork{30000000, kind, false}, &never)) << to_string(kind);  // 30 ms, in full
  }
}

TEST(ThroughputModel, GroupsOfKOverlapTheFrontendAndTheDevice) {
  // batch: N (h + d); none: N max + min; every=K: N max + ceil(N/K) min.
  EXPECT_DOUBLE_EQ(predicted_wall_s(10, 1, 0.002, 0.003), 10 * 0.005);
  EXPECT_DOUBLE_EQ(predicted_wall_s(10, 10, 0.002, 0.003), 10 * 0.003 + 0.002);
  EXPECT_DOUBLE_EQ(predicted_wall_s(10, 1000, 0.002, 0.003), 10 * 0.003 + 0.002);  // K past N: once
  EXPECT_DOUBLE_EQ(predicted_wall_s(10, 4, 0.003, 0.002), 10 * 0.003 + 3 * 0.002);   // ceil(10/4) = 3 groups
  EXPECT_DOUBLE_EQ(predicted_wall_s(0, 1, 0.003, 0.002), 0.0);
  EXPECT_EQ(model_every({SyncPolicy::EveryBatch, 1}, 100, 0, 1000), 1);
  EXPECT_EQ(model_every({SyncPolicy::EveryK, 10}, 100, 0, 1000), 10);
  EXPECT_EQ(model_every({SyncPolicy::Never, 0}, 100, 0, 1000), 100);
  EXPECT_EQ(model_every({SyncPolicy::Never, 0}, 100, 2000, 1000), 100);  // bounded at two batches: as none
  EXPECT_EQ(model_every({SyncPolicy::Never, 0}, 100, 500, 1000), 1);     // under one batch: waits for each
}

// Host work far above the device's (a tiny model): the frontend is the
// bottleneck, h is the host work (and a little more), the backlog stays at
// one batch even unsynchronized, and the model predicts the wall time.
TEST(ThroughputModel, AHostBoundRunIsPredictedAndSaysWhy) {
  ScratchDir dir;
  Ran r = run_train_mlp("--device cpu --compare --compare-every 4 --batches 12 --batch-size 16 --features 8 "
                        "--hidden 8 --host-work 15ms --summary-json " + dir.file("s.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("host work 15.000 ms per batch (wait)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("predicted s"), std::string::npos) << r.out;
  const amlp::Json s = read_json(dir.file("s.json"));
  ASSERT_EQ(s.size(), 4u);  // batch, none, every=4, bounded
  for (const amlp::Json& run : s) {
    const std::string label = run.at("label").get<std::string>();
    EXPECT_DOUBLE_EQ(run.at("host_work_s").get<double>(), 0.015);
    EXPECT_EQ(run.at("host_work_kind"), "wait");
    const double h = run.at("host_s_per_batch").get<double>(), d = run.at("device_s_per_batch").get<double>();
    EXPECT_GE(h, 0.015) << label;
    // A sleep's overshoot and the loop's own work, plus whatever a loaded
    // machine adds (a mean over 12 batches: one 100 ms stall adds 8 ms); a
    // frontend that did the host work twice, or counted the device's time,
    // would be past it.
    EXPECT_LT(h, 0.015 * 2) << label;
    EXPECT_GT(d, 0.0) << label;
    EXPECT_LT(d, h) << label;
    EXPECT_LE(run.at("peak_backlog_batches").get<int>(), 2) << label << ": the device kept up";
    const double wall = run.at("wall_s").get<double>(), predicted = run.at("predicted_wall_s").get<double>();
    EXPECT_NEAR(wall / predicted, 1.0, 0.25) << label << ": measured " << wall << " s, predicted " << predicted;
    EXPECT_EQ(run.at("model_every").get<int>(), label == "batch" ? 1 : label == "every=4" ? 4 : 12) << label;
  }
  // The one-run summary names the bottleneck.
  Ran one = run_train_mlp("--device cpu --sync none --batches 4 --batch-size 16 --features 8 --hidden 8 "
                          "--host-work 10ms");
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("the frontend is the bottleneck (h > d)"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("predicted wall"), std::string::npos) << one.out;
}

// --host-work match measures the device first and uses its time for every mode.
TEST(ThroughputModel, MatchTakesTheDevicesTimePerBatch) {
  ScratchDir dir;
  Ran r = run_train_mlp("--device cpu --sync none --batches 6 --batch-size 64 --features 64 --hidden 128 "
                        "--host-work match --summary-json " + dir.file("s.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("the device's time per batch over 6 synchronized batches"), std::string::npos) << r.out;
  const amlp::Json s = read_json(dir.file("s.json"));
  EXPECT_GT(s[0].at("host_work_s").get<double>(), 0.0);
}

}  // namespace
}  // namespace amlp::train
