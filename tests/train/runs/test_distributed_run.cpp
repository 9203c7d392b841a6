// Covers train/runs/distributed_run.cpp (the ranks' figures, gathered by name).
// What each rank sends rank 0 is one list (gathered_rank_figures): each
// figure goes from a rank's run to the wire and back into rank 0's record
// of the rank, and comes out in the summary's rank object under its own
// name. The gather across processes is tests/dist/mpi_train.cpp's.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "framework/json.h"
#include "train/report/run_figures.h"
#include "train/runs/distributed_run.h"

namespace amlp::train {
namespace {

// The rank object of the summary (run_figures.cpp's rank table), by key.
Json rank_json(const RankResult& k) { return figures_object(rank_figures(), k); }

// A run whose every gathered figure has a value of its own (i + 1) * 1000 + 7.
RunResult run_with_distinct_figures() {
  RunResult r;
  r.measured.samples_per_s = 1007;
  r.measured.wall_s = 2007;
  r.measured.mem_increase_bytes = 3007;
  r.predicted.increase_bytes = 4007;
  r.measured.host_s_per_batch = 5007;
  r.measured.device_s_per_batch = 6007;
  return r;
}

// Each figure, by name: the value the rank read from its run is the value
// rank 0's summary shows under that name, for every gathered figure.
TEST(GatheredRankFigures, EachRoundTripsByName) {
  const RunResult run = run_with_distinct_figures();
  const std::vector<double> row = rank_figures_row(run);
  ASSERT_EQ(row.size(), gathered_rank_figures().size());
  const Json k = rank_json(rank_result_of(3, row));
  EXPECT_EQ(k.at("rank").get<int>(), 3);
  std::set<double> seen;
  for (const GatheredRankFigure& f : gathered_rank_figures()) {
    SCOPED_TRACE(f.name);
    ASSERT_TRUE(k.contains(f.name)) << "no key of the summary's rank objects";
    EXPECT_EQ(k.at(f.name).get<double>(), f.read(run));
    seen.insert(f.read(run));
  }
  EXPECT_EQ(seen.size(), gathered_rank_figures().size()) << "two figures read the same field of the run";
}

// The named values: samples_per_s is the run's samples per second, and so on.
TEST(GatheredRankFigures, ReadTheRunsOwnFields) {
  const RunResult run = run_with_distinct_figures();
  const Json k = rank_json(rank_result_of(0, rank_figures_row(run)));
  EXPECT_EQ(k.at("samples_per_s").get<double>(), 1007);
  EXPECT_EQ(k.at("wall_s").get<double>(), 2007);
  EXPECT_EQ(k.at("mem_increase_bytes").get<size_t>(), 3007u);
  EXPECT_EQ(k.at("predicted_increase_bytes").get<size_t>(), 4007u);
  EXPECT_EQ(k.at("host_s_per_batch").get<double>(), 5007);
  EXPECT_EQ(k.at("device_s_per_batch").get<double>(), 6007);
}

// Every key of the rank objects but the rank itself is a gathered figure.
TEST(GatheredRankFigures, CoverEveryKeyOfTheRankObjects) {
  std::set<std::string> gathered, keys;
  for (const GatheredRankFigure& f : gathered_rank_figures()) gathered.insert(f.name);
  for (const Figure<RankResult>& f : rank_figures())
    if (std::string(f.key) != "rank") keys.insert(f.key);
  EXPECT_EQ(gathered, keys);
}

// A row of another length (a rank built from another list) is refused, named.
TEST(GatheredRankFigures, ARowOfAnotherLengthIsRefused) {
  try {
    rank_result_of(1, {1.0, 2.0});
    FAIL() << "a row of two figures was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 sent 2 figures, not " +
                                         std::to_string(gathered_rank_figures().size())),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace amlp::train
