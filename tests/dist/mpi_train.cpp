// Covers train/runs/distributed_run.cpp, framework/dist/process_group.cpp, framework/dist/failure.cpp (train_mlp --distributed mpi under mpirun).
// train_mlp --distributed mpi under `mpirun -np 2`: the same
// losses as one process, each rank's memory log and rank 0's summary and
// trace with both ranks, and every way a job ends: a rank that fails, a rank
// killed outright, SIGINT to mpirun, options that differ between ranks. Each
// case starts its jobs itself (train_mlp found beside this test) and checks
// how they ended, what they wrote, and that they ended within 30 s.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include "framework/json.h"
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dist/mpi_job.h"
#include "npy_writer.h"
#include "sanitized.h"
#include "test_paths.h"
#include "train/train_test_util.h"  // read_json

namespace {

namespace fs = std::filesystem;

using amlp::testing::count_lines_with;
using amlp::testing::Job;
using amlp::testing::read_json;

// Runs `script` with sh in `dir`, mpirun as MPIRUN and train_mlp as TRAIN,
// killed at 90 s (status 137).
Job run_script(const std::string& dir, const std::string& script) {
  return amlp::testing::run_job_command("cd '" + dir +
                                        "' && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MPIRUN='" +
                                        std::string(ASYNCMLP_MPIEXEC) + " --oversubscribe' TRAIN='" +
                                        amlp::testing::program_path("train_mlp") + "' timeout -s KILL 90 sh -c '" +
                                        script + "' 2>&1");
}

// The loss column of a memory log, one entry per row.
std::vector<double> losses(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::vector<double> out;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream row(line);
    for (std::string c; std::getline(row, c, ',');) cells.push_back(c);
    out.push_back(cells.size() > 7 && !cells[7].empty() ? std::stod(cells[7]) : NAN);
  }
  return out;
}

class MpiTrain : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("amlp_mpi_train_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir() const { return dir_.string(); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  // An interrupted job: rank 0's summary says so, with both ranks' figures,
  // and both ranks' memory logs end at the batch it names.
  void expect_every_rank_stopped_after_the_same_batch() const {
    const amlp::Json s = read_json(file("s.json"));
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0]["status"], "interrupted");
    EXPECT_TRUE(s[0]["interrupted"].get<bool>());
    EXPECT_EQ(s[0]["ranks"].size(), 2u);
    EXPECT_GE(s[0]["batches_done"].get<int>(), 20);
    const size_t rows0 = losses(file("mem.rank0.csv")).size(), rows1 = losses(file("mem.rank1.csv")).size();
    EXPECT_EQ(rows0, rows1) << "the ranks stopped after different batches";
    EXPECT_EQ(rows0, s[0]["batches_done"].get<size_t>());
  }

  fs::path dir_;
};

// A small model: an odd global batch, so the ranks take 33 and 32 rows.
const std::string kShape = "--device cpu --batch-size 65 --features 24 --hidden 48,16 --quiet";
const std::string kRun = kShape + " --batches 12";

TEST_F(MpiTrain, TwoRanksTrainAsOneProcess) {
  const Job one = run_script(dir(), "$TRAIN " + kRun + " --memory-log one.csv --summary-json one.json");
  ASSERT_EQ(one.status, 0) << one.output;
  const Job two = run_script(dir(), "$MPIRUN -np 2 $TRAIN " + kRun +
                                        " --distributed mpi --memory-log two.csv --summary-json two.json");
  ASSERT_EQ(two.status, 0) << two.output;
  const std::vector<double> a = losses(file("one.csv")), b = losses(file("two.rank0.csv")),
                            c = losses(file("two.rank1.csv"));
  ASSERT_EQ(a.size(), 12u);
  ASSERT_EQ(b.size(), a.size());
  ASSERT_EQ(c.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(b[i], a[i], 1e-5 * std::fabs(a[i])) << "batch " << i + 1;
    EXPECT_EQ(c[i], b[i]) << "batch " << i + 1 << ": the ranks read the same global loss";
  }
  const double final_one = read_json(file("one.json"))[0]["final_loss"].get<double>();
  const double final_two = read_json(file("two.json"))[0]["final_loss"].get<double>();
  EXPECT_EQ(final_two, final_one);
  // One rank under mpirun joins MPI, trains like one process and finalizes:
  // mpirun ends with 0, not "exiting improperly".
  const Job np1 = run_script(dir(), "$MPIRUN -np 1 $TRAIN " + kRun + " --distributed mpi --memory-log np1.csv");
  ASSERT_EQ(np1.status, 0) << np1.output;
  EXPECT_EQ(np1.output.find("improperly"), std::string::npos) << np1.output;
  EXPECT_EQ(losses(file("np1.csv")), a);
  // Without mpirun, --distributed mpi is one rank: the losses of one process, exactly.
  const Job alone = run_script(dir(), "$TRAIN " + kRun + " --distributed mpi --memory-log alone.csv");
  ASSERT_EQ(alone.status, 0) << alone.output;
  EXPECT_EQ(losses(file("alone.csv")), a);
}

TEST_F(MpiTrain, EachRankLogsAndRankZeroSummarizesBoth) {
  const Job j = run_script(dir(), "$MPIRUN -np 2 $TRAIN " + kRun +
                                      " --sync none --distributed mpi --memory-log mem.csv --summary-json s.json "
                                      "--trace t.json");
  ASSERT_EQ(j.status, 0) << j.output;
  EXPECT_EQ(count_lines_with(j.output, "summary"), 1) << "rank 0 alone prints:\n" << j.output;
  EXPECT_EQ(count_lines_with(j.output, "    rank 0 "), 1) << j.output;
  EXPECT_EQ(count_lines_with(j.output, "    rank 1 "), 1) << j.output;
  for (const char* log : {"mem.rank0.csv", "mem.rank1.csv"}) EXPECT_EQ(losses(file(log)).size(), 12u) << log;
  EXPECT_FALSE(fs::exists(file("mem.csv")));
  const amlp::Json s = read_json(file("s.json"));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_TRUE(s[0]["distributed"].get<bool>());
  ASSERT_EQ(s[0]["ranks"].size(), 2u);
  for (int r = 0; r < 2; ++r) {
    const amlp::Json& k = s[0]["ranks"][r];
    EXPECT_EQ(k["rank"], r);
    EXPECT_GT(k["samples_per_s"].get<double>(), 0);
    EXPECT_GT(k["mem_increase_bytes"].get<double>(), 0);
    EXPECT_GT(k["predicted_increase_bytes"].get<double>(), 0);
    EXPECT_GT(k["device_s_per_batch"].get<double>(), 0);
  }
  EXPECT_GT(s[0]["comm_alpha_s"].get<double>(), 0);
  // One trace, each rank a process with its queues and its reductions.
  const amlp::Json t = read_json(file("t.json"));
  std::set<int> pids, reducing;
  for (const amlp::Json& e : t["traceEvents"]) {
    pids.insert(e["pid"].get<int>());
    if (e["name"] == "mpi_all_reduce") reducing.insert(e["pid"].get<int>());
  }
  EXPECT_EQ(pids, (std::set<int>{0, 1}));
  EXPECT_EQ(reducing, (std::set<int>{0, 1}));
  EXPECT_FALSE(fs::exists(file("t.rank0.json")));
  EXPECT_FALSE(fs::exists(file("t.rank1.json")));
}

// --compare's runs one after the other, each across both ranks, with host
// work calibrated on rank 0 and the allocation policy run: every mode ends at
// one process's loss, and every rank's figures are in each run's summary.
TEST_F(MpiTrain, EveryModeRunsAcrossTheRanks) {
  const std::string opts = kRun + " --compare --host-work match --alloc run";
  const Job one = run_script(dir(), "$TRAIN " + opts + " --summary-json one.json");
  ASSERT_EQ(one.status, 0) << one.output;
  const Job two = run_script(dir(), "$MPIRUN -np 2 $TRAIN " + opts + " --distributed mpi --summary-json two.json");
  ASSERT_EQ(two.status, 0) << two.output;
  const amlp::Json a = read_json(file("one.json")), b = read_json(file("two.json"));
  ASSERT_EQ(a.size(), 5u);
  ASSERT_EQ(b.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(b[i]["label"], a[i]["label"]);
    const double la = a[i]["final_loss"].get<double>(), lb = b[i]["final_loss"].get<double>();
    EXPECT_NEAR(lb, la, 1e-5 * std::fabs(la)) << a[i]["label"];
    EXPECT_EQ(b[i]["ranks"].size(), 2u) << a[i]["label"];
    EXPECT_EQ(b[i]["host_work_s"], b[0]["host_work_s"]) << "every run works alike";
  }
  EXPECT_GT(b[0]["host_work_s"].get<double>(), 0);
}

// --sweep across the ranks: every rank sweeps the same fractions of rank 0's
// d, and rank 0 alone prints the table and writes the summary, its sweep rows
// and curves beside the runs, each run with both ranks' figures.
TEST_F(MpiTrain, TheSweepRunsAcrossTheRanksAndRankZeroWritesItsSummary) {
  if (::access(ASYNCMLP_MPIEXEC, X_OK) != 0) GTEST_SKIP() << "no mpirun at " << ASYNCMLP_MPIEXEC;
  // Ten runs of lock-stepped ranks, the second five each spinning as long as a batch
  // takes: under a sanitizer, fewer batches.
  const int batches = amlp::testing::kSanitized ? 4 : 10;
  const Job j = run_script(dir(), "$MPIRUN -np 2 $TRAIN --distributed mpi --device cpu --config " +
                                      amlp::testing::source_file("configs/quick.ini") +
                                      " --features 128 --hidden 128,32"  // quick.ini's batches, a quarter its work
                                      " --sweep --sweep-fractions 0,1 --batches " + std::to_string(batches) +
                                      " --quiet --summary-json s.json");
  ASSERT_EQ(j.status, 0) << j.output;
  EXPECT_EQ(count_lines_with(j.output, "sweep: d = "), 1) << "rank 0 alone prints:\n" << j.output;
  EXPECT_EQ(count_lines_with(j.output, "sweep: " + std::to_string(batches) + " batches of 256"), 1) << j.output;
  std::vector<std::string> written;
  for (const auto& e : fs::directory_iterator(dir_)) written.push_back(e.path().filename().string());
  EXPECT_EQ(written, std::vector<std::string>{"s.json"}) << "one summary, rank 0's";
  const amlp::Json s = read_json(file("s.json"));
  ASSERT_TRUE(s.is_object());
  const amlp::Json &runs = s["runs"], &rows = s["sweep"];
  ASSERT_EQ(runs.size(), 10u);  // 2 fractions x batch, none, every=2, every=10, bounded
  ASSERT_EQ(rows.size(), runs.size());
  EXPECT_EQ(s["sweep_model"]["curves"].size(), 5u);
  EXPECT_GT(s["sweep_model"]["device_s"].get<double>(), 0);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i]["fraction"].get<double>(), i < 5 ? 0.0 : 1.0);
    const amlp::Json& run = runs.at(rows[i]["run"].get<size_t>());
    EXPECT_EQ(run["label"], rows[i]["mode"]);
    EXPECT_TRUE(run["distributed"].get<bool>());
    EXPECT_EQ(run["ranks"].size(), 2u) << run["label"];
    EXPECT_EQ(run["batches_done"], batches) << run["label"];
    EXPECT_EQ(run["status"], "completed") << run["label"];
  }
  // Host work tops the frontend's own time per batch (queue_host_s) up to the
  // target f·d; where the loop alone already takes longer (a slow, loaded or
  // sanitized build) there is nothing to add. Either way the rows say so.
  const double d = s["sweep_model"]["device_s"].get<double>(), h0 = s["sweep_model"]["queue_host_s"].get<double>();
  for (size_t i = 0; i < rows.size(); ++i) {
    const double f = rows[i]["fraction"].get<double>(), target = rows[i]["target_h_s"].get<double>(),
                 work = rows[i]["host_work_s"].get<double>();
    EXPECT_DOUBLE_EQ(target, f * d) << i;
    EXPECT_EQ(work > 0, target > h0) << "row " << i << ": target h " << target << " s, the loop's own h " << h0 << " s";
    EXPECT_EQ(work, rows[i < 5 ? 0 : 5]["host_work_s"].get<double>()) << "one host work per fraction";
  }
}

// Rank 1 cannot write its memory log (/dev/full): it fails with its line,
// rank 0 prints one line naming rank 1 and its error, and the job ends.
TEST_F(MpiTrain, ARankThatFailsEndsEveryRank) {
  fs::create_symlink("/dev/full", file("mem.rank1.csv"));
  const Job j = run_script(dir(), "$MPIRUN -np 2 $TRAIN " + kShape + " --batches 100000 --distributed mpi --memory-log mem.csv");
  EXPECT_NE(j.status, 0) << j.output;
  EXPECT_LT(j.seconds, 30) << j.output;
  EXPECT_EQ(count_lines_with(j.output, "train_mlp: error: rank 1 of 2: run 'batch' failed"), 1) << j.output;
  EXPECT_EQ(count_lines_with(j.output, "train_mlp: error: rank 1 of 2 failed: run 'batch' failed"), 1) << j.output;
  EXPECT_EQ(count_lines_with(j.output, "No space left on device"), 2) << j.output;
}

// Sends `signal` to rank 1: mpirun's child whose OMPI_COMM_WORLD_RANK is 1.
std::string signal_rank1(const std::string& signal) {
  return "for p in $(pgrep -P $M); do tr \"\\0\" \"\\n\" < /proc/$p/environ | grep -qx OMPI_COMM_WORLD_RANK=1 && "
         "kill -" + signal + " $p; done; ";
}
const std::string kKillRank1 = signal_rank1("KILL");
// Starts a long job in the background (its output in job.txt) and waits
// until rank 1 logged 20 batches.
const std::string kStartLong =
    "$MPIRUN -np 2 $TRAIN " + kShape +
    " --batches 10000000 --sync every=10 --distributed mpi --memory-log mem.csv --summary-json s.json > job.txt "
    "2>&1 & M=$!; i=0; while [ $(cat mem.rank1.csv 2>/dev/null | wc -l) -lt 20 ] && [ $i -lt 600 ]; do sleep 0.05; "
    "i=$((i+1)); done; ";

TEST_F(MpiTrain, ARankKilledOutrightEndsTheJob) {
  const Job j = run_script(dir(), kStartLong + kKillRank1 + "wait $M; echo \"mpirun exited $?\"; cat job.txt");
  EXPECT_NE(j.status, 137) << "still running at 90 s:\n" << j.output;
  EXPECT_LT(j.seconds, 30 + 5) << j.output;
  EXPECT_EQ(count_lines_with(j.output, "mpirun exited 0"), 0) << j.output;
  EXPECT_EQ(count_lines_with(j.output, "mpirun exited"), 1) << j.output;
  EXPECT_EQ(count_lines_with(j.output, "summary"), 0) << j.output;
}

// mpirun turns SIGINT into SIGTERM on every rank: each stops queueing, the
// ranks agree on the batch to stop after, and rank 0's summary says so.
TEST_F(MpiTrain, SigintToMpirunEndsEveryRankWithTheSummaryMarkedInterrupted) {
  const Job j = run_script(dir(), kStartLong + "kill -INT $M; wait $M; echo \"mpirun exited $?\"; cat job.txt");
  EXPECT_NE(j.status, 137) << "still running at 90 s:\n" << j.output;
  EXPECT_LT(j.seconds, 30 + 5) << j.output;
  EXPECT_EQ(count_lines_with(j.output, "mpirun exited 0"), 0) << j.output;
  EXPECT_EQ(count_lines_with(j.output, "train_mlp: interrupted at batch"), 2) << j.output;
  expect_every_rank_stopped_after_the_same_batch();
}

// SIGINT to one rank alone: the ranks vote, both stop after the same batch,
// finish, write everything marked interrupted and exit 130, and so does mpirun.
TEST_F(MpiTrain, AnInterruptOnOneRankStopsEveryRankAfterTheSameBatch) {
  const Job j = run_script(dir(), kStartLong + signal_rank1("INT") + "wait $M; echo \"mpirun exited $?\"; cat job.txt");
  EXPECT_LT(j.seconds, 30 + 5) << j.output;
  EXPECT_EQ(count_lines_with(j.output, "mpirun exited 130"), 1) << j.output;
  EXPECT_EQ(count_lines_with(j.output, "(SIGINT): the queued batches finished"), 2) << j.output;
  expect_every_rank_stopped_after_the_same_batch();
}

// On a data set (--data) each rank gathers its rows of every batch (33 and
// 32 of 65; the last batch of 30 kept, 15 and 15): the losses of one process.
TEST_F(MpiTrain, TwoRanksOnADataSetTrainAsOneProcess) {
  amlp::testing::write_linear_data(file("x.npy"), file("y.npy"), 680, 24, /*y_divisor=*/8, /*y_column=*/false);
  const std::string data = kShape + " --data x.npy --targets y.npy --last-batch keep --shuffle --epochs 2";
  const Job one = run_script(dir(), "$TRAIN " + data + " --memory-log one.csv");
  ASSERT_EQ(one.status, 0) << one.output;
  const Job two = run_script(dir(), "$MPIRUN -np 2 $TRAIN " + data + " --distributed mpi --memory-log two.csv");
  ASSERT_EQ(two.status, 0) << two.output;
  const std::vector<double> a = losses(file("one.csv")), b = losses(file("two.rank0.csv"));
  ASSERT_EQ(a.size(), 22u) << "two epochs of 11 batches: ten of 65 and one of 30";
  ASSERT_EQ(b.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 1e-5 * std::fabs(a[i])) << "batch " << i + 1;
}

// --save across the ranks: rank 0 writes the one file once the batches ran;
// it holds what one process of the same global batches saves (the losses of
// a run that loads either agree), and --load under mpirun gives every rank
// those parameters: its losses are one process's loading the same file.
TEST_F(MpiTrain, SaveAndLoadAcrossTheRanksAsOneProcess) {
  const Job two = run_script(dir(), "$MPIRUN -np 2 $TRAIN " + kRun + " --distributed mpi --save two.safetensors");
  ASSERT_EQ(two.status, 0) << two.output;
  EXPECT_EQ(count_lines_with(two.output, "parameters saved: "), 1) << "rank 0 alone writes:\n" << two.output;
  const Job one = run_script(dir(), "$TRAIN " + kRun + " --save one.safetensors");
  ASSERT_EQ(one.status, 0) << one.output;
  const std::string next = kShape + " --batches 3 --sync batch";
  const Job from_one = run_script(dir(), "$TRAIN " + next + " --load one.safetensors --memory-log a.csv");
  const Job from_two = run_script(dir(), "$TRAIN " + next + " --load two.safetensors --memory-log b.csv");
  const Job ranks = run_script(dir(), "$MPIRUN -np 2 $TRAIN " + next +
                                          " --distributed mpi --load one.safetensors --memory-log c.csv");
  ASSERT_EQ(from_one.status, 0) << from_one.output;
  ASSERT_EQ(from_two.status, 0) << from_two.output;
  ASSERT_EQ(ranks.status, 0) << ranks.output;
  const std::vector<double> a = losses(file("a.csv")), b = losses(file("b.csv")), c = losses(file("c.rank0.csv")),
                            d = losses(file("c.rank1.csv"));
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  ASSERT_EQ(c.size(), 3u);
  ASSERT_EQ(d.size(), 3u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(b[i], a[i], 1e-5 * std::fabs(a[i])) << "batch " << i + 1 << ": the two saves hold the same parameters";
    EXPECT_NEAR(c[i], a[i], 1e-5 * std::fabs(a[i])) << "batch " << i + 1 << ": the ranks loaded them";
    EXPECT_EQ(d[i], c[i]) << "batch " << i + 1;
  }
}

// Every option is compared across the ranks, the files included: ranks
// saving to different files, or training on different data, are refused.
TEST_F(MpiTrain, RanksGivenOtherFilesAreRefused) {
  const Job save = run_script(dir(), "$MPIRUN -np 1 $TRAIN " + kRun + " --distributed mpi --save a.safetensors : -np 1 $TRAIN " +
                                         kRun + " --distributed mpi --save b.safetensors");
  EXPECT_EQ(save.status, 2) << save.output;
  EXPECT_EQ(count_lines_with(save.output,
                             "rank 1's options differ from rank 0's: 'save=b.safetensors' vs 'save=a.safetensors'"),
            1)
      << save.output;
  EXPECT_FALSE(fs::exists(file("a.safetensors")));
  const Job sweep = run_script(dir(), "$MPIRUN -np 1 $TRAIN " + kRun + " --distributed mpi --sweep : -np 1 $TRAIN " +
                                          kRun + " --distributed mpi");
  EXPECT_EQ(sweep.status, 2) << sweep.output;
  EXPECT_EQ(count_lines_with(sweep.output, "rank 1's options differ from rank 0's: 'sweep=off' vs 'sweep=on'"), 1)
      << sweep.output;
}

TEST_F(MpiTrain, OptionsThatDifferBetweenRanksAreRefusedBeforeAnyBatch) {
  const Job j = run_script(dir(), "$MPIRUN -np 1 $TRAIN " + kRun + " --distributed mpi --lr 0.01 --memory-log m.csv : -np 1 $TRAIN " +
                                      kRun + " --distributed mpi --lr 0.02 --memory-log m.csv");
  EXPECT_EQ(j.status, 2) << j.output;
  EXPECT_LT(j.seconds, 30) << j.output;
  EXPECT_EQ(count_lines_with(j.output, "train_mlp: error: rank 1's options differ from rank 0's: 'lr=0.02' vs 'lr=0.01'"), 1)
      << j.output;
  EXPECT_EQ(count_lines_with(j.output, "batch "), 0) << j.output;
  EXPECT_FALSE(fs::exists(file("m.rank0.csv")));
}

}  // namespace
