// test_sync_auto.cpp — --sync auto --memory-budget: the options, the choice
// the models make for given h, d and bytes per batch, and a run that says
// what it chose and why, in its summary and in the summary JSON.
#include <gtest/gtest.h>

#include <algorithm>
#include "framework/json.h"

#include "train/options/options.h"
#include "train/predict/predict.h"
#include "train/studies/sync_auto.h"
#include "train/train_test_util.h"

namespace amlp::train {
namespace {

using testing::expect_bad_input;
using testing::Ran;
using testing::read_json;
using testing::run_train_mlp;
using testing::ScratchDir;

constexpr size_t kMB = 1000000;

TEST(SyncAutoOptions, ParsesAndRefusesWhatDoesNotCombine) {
  const ParseOutcome p = parse_options({"--sync", "auto", "--memory-budget", "64MB"});
  ASSERT_EQ(p.status, ParseStatus::Run) << p.message;
  const SyncAutoSettings* s = p.options.studies.find<SyncAutoSettings>();
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->automatic);
  EXPECT_EQ(s->budget, 64 * kMB);
  EXPECT_FALSE(parse_options({"--sync", "none"}).options.studies.asked<SyncAutoSettings>());
  expect_bad_input({
      {"--sync auto", "--sync auto needs --memory-budget"},
      {"--memory-budget 64MB", "add --sync auto"},
      {"--sync auto --memory-budget 64MB --compare", "--compare"},
      {"--sync auto --memory-budget 64MB --max-pending-bytes 8MB", "drop --max-pending-bytes"},
      {"--sync auto --memory-budget 64MB --alloc run", "--alloc run"},
      {"--sync sometimes", "must be auto, batch, none or every=K"},
      {"--sync auto --memory-budget lots", "--memory-budget"},
  });
}

// d = 2h: running ahead pays. A bound of two batches is as fast as none and
// holds far less; every=K is a little slower; a budget under two batches
// leaves the largest K that fits; under one batch nothing fits: batch.
TEST(SyncAutoChoice, TheFastestWithinTheBudgetThenTheLeastMemory) {
  const double h = 0.001, d = 0.002;
  const size_t bpb = 4 * kMB, largest = kMB / 2;
  AutoChoice big = choose_sync(100, h, d, bpb, largest, 1000 * kMB);
  EXPECT_EQ(big.chosen.label, "bounded");
  EXPECT_EQ(big.chosen.max_pending_bytes, 2 * bpb);
  EXPECT_DOUBLE_EQ(big.chosen.predicted_wall_s, predicted_wall_s(100, 100, h, d));
  EXPECT_NE(big.why.find("chose bounded at 8.0 MB"), std::string::npos) << big.why;

  AutoChoice mid = choose_sync(100, h, d, bpb, largest, 2 * bpb);  // under two batches and one output
  EXPECT_EQ(mid.chosen.label, "bounded");
  EXPECT_EQ(mid.chosen.max_pending_bytes, 2 * bpb - largest);
  EXPECT_LE(mid.chosen.predicted_increase_bytes, 2 * bpb);

  AutoChoice k = choose_sync(100, h, d, bpb, 2 * bpb + 1, 3 * bpb);  // the bound's room is under one batch
  ASSERT_EQ(k.chosen.sync.policy, SyncPolicy::EveryK) << k.why;
  const int every = k.chosen.sync.every;
  EXPECT_LE(predicted_backlog(100, every, h, d, 0, bpb) * bpb, 3 * bpb);
  EXPECT_GT(predicted_backlog(100, every + 1, h, d, 0, bpb) * bpb, 3 * bpb) << "the largest K that fits";
  EXPECT_LT(k.chosen.predicted_wall_s, predicted_wall_s(100, 1, h, d));

  AutoChoice none_fits = choose_sync(100, h, d, bpb, largest, bpb / 2);
  EXPECT_EQ(none_fits.chosen.label, "batch");
  EXPECT_FALSE(none_fits.chosen.fits);
  EXPECT_EQ(none_fits.why.rfind("nothing fits", 0), 0u) << none_fits.why;

  // h > d: the device keeps up, none and bounded hold one batch and are as
  // fast as any; the bound wins, since none's batch lasts only while h > d
  // does (at h just over d, as measured, a run with h a little under d would
  // queue the rest of it: over the budget).
  for (const double host : {0.003, 0.00102}) {
    AutoChoice host_bound = choose_sync(100, host, 0.001, bpb, largest, 16 * kMB);
    EXPECT_EQ(host_bound.chosen.label, "bounded") << host_bound.why;
    EXPECT_EQ(host_bound.chosen.predicted_increase_bytes, bpb);
    const auto none = std::find_if(host_bound.candidates.begin(), host_bound.candidates.end(),
                                   [](const AutoCandidate& k) { return k.label == "none"; });
    ASSERT_NE(none, host_bound.candidates.end());
    EXPECT_TRUE(none->fits);
    EXPECT_DOUBLE_EQ(none->predicted_wall_s, host_bound.chosen.predicted_wall_s);
  }
  // With no room for a bound of a batch, none is the one that runs ahead.
  AutoChoice no_bound = choose_sync(100, 0.003, 0.001, bpb, 2 * bpb + 1, 3 * bpb);
  EXPECT_EQ(no_bound.chosen.label, "none") << no_bound.why;
}

TEST(SyncAutoRun, TheSummarySaysWhatItChoseAndWhy) {
  ScratchDir dir;
  Ran r = run_train_mlp("--device cpu --sync auto --memory-budget 64MB --batches 12 --batch-size 64 --features 64 "
                        "--hidden 128 --quiet --summary-json " + dir.file("s.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("sync auto: chose "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  sync auto           chose "), std::string::npos) << r.out;
  const amlp::Json s = read_json(dir.file("s.json"));
  ASSERT_EQ(s.size(), 1u);
  const std::string why = s[0].at("sync_auto").get<std::string>();
  EXPECT_EQ(why.rfind("chose ", 0), 0u) << why;
  EXPECT_NE(why.find("of the 64.0 MB budget"), std::string::npos) << why;
  EXPECT_LE(s[0].at("predicted_increase_bytes").get<size_t>(), 64 * kMB);
  // The mode run is the one named.
  const std::string mode = s[0].at("mode").get<std::string>();
  const bool bounded = s[0].at("max_pending_bytes").get<size_t>() > 0;
  EXPECT_EQ(why.rfind("chose " + (bounded ? std::string("bounded") : mode), 0), 0u) << mode << ": " << why;
  // Without --sync auto the key is null.
  Ran plain = run_train_mlp("--device cpu --batches 2 --batch-size 8 --features 8 --hidden 8 --quiet --summary-json " +
                            dir.file("p.json"));
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_TRUE(read_json(dir.file("p.json"))[0].at("sync_auto").is_null());
}

}  // namespace
}  // namespace amlp::train
