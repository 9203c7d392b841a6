// Covers framework/dist/failure.cpp, framework/dist/process_group.cpp (jobs of mpi_fault_rank under mpirun).
// a failed rank ends every rank: each case starts
// `mpirun -np 2 mpi_fault_rank CASE` (the rank program, mpi_fault_rank.cpp)
// and checks how the job ended, what it printed, and that it ended within
// 30 s (a job that hangs is killed at 60 s and fails the case).
#include <gtest/gtest.h>

#include <string>

#include "dist/mpi_job.h"
#include "test_paths.h"

namespace {

using amlp::testing::count_lines_with;
using amlp::testing::Job;

Job run_job(const std::string& scenario) {
  // OpenMPI's mpirun refuses to run as root (CI containers) without these two.
  return amlp::testing::run_job_command(
      std::string("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout -s KILL 60 ") + ASYNCMLP_MPIEXEC +
      " --oversubscribe -np 2 " + amlp::testing::program_path("mpi_fault_rank") + " " + scenario + " 2>&1");
}

constexpr double kWithin = 30;

TEST(MpiFaults, AHealthyJobExitsZero) {
  const Job j = run_job("ok");
  EXPECT_EQ(j.status, 0) << j.output;
  EXPECT_EQ(count_lines_with(j.output, "mpi_fault_rank: rank 0 of 2 trained 8 steps"), 1) << j.output;
  EXPECT_EQ(count_lines_with(j.output, "mpi_fault_rank: rank 1 of 2 trained 8 steps"), 1) << j.output;
}

// Rank 1 asks to stop after step 3 (as an interrupt would): both ranks stop
// after the same step, 3 + the lag of 2, and the job ends cleanly.
TEST(MpiFaults, AStopOnOneRankStopsBothAfterTheSameStep) {
  const Job j = run_job("stop");
  EXPECT_EQ(j.status, 0) << j.output;
  EXPECT_EQ(count_lines_with(j.output, "mpi_fault_rank: rank 0 of 2 trained 6 steps"), 1) << j.output;
  EXPECT_EQ(count_lines_with(j.output, "mpi_fault_rank: rank 1 of 2 trained 6 steps"), 1) << j.output;
}

// Rank 1 throws; rank 0, blocked in that step's reduction, prints one line
// naming rank 1 and its error and exits; the job fails.
TEST(MpiFaults, ARankThatThrowsEndsTheOtherWithOneLineNamingIt) {
  const Job j = run_job("throw");
  EXPECT_NE(j.status, 0) << j.output;
  EXPECT_LT(j.seconds, kWithin) << j.output;
  EXPECT_EQ(count_lines_with(j.output, "mpi_fault_rank: error: rank 1 of 2 failed: injected fault at step 3 (rank 0 stops)"), 1)
      << j.output;
  EXPECT_EQ(count_lines_with(j.output, "mpi_fault_rank: error: rank 1 of 2: injected fault at step 3"), 1) << j.output;
}

// Rank 1 dies by SIGKILL (it can say nothing): mpirun ends the job.
TEST(MpiFaults, ARankKilledOutrightEndsTheJob) {
  const Job j = run_job("kill");
  EXPECT_NE(j.status, 0) << j.output;
  EXPECT_NE(j.status, 124) << "the job was still running at 60 s:\n" << j.output;
  EXPECT_LT(j.seconds, kWithin) << j.output;
  EXPECT_GE(count_lines_with(j.output, "Killed"), 1) << "the launcher did not report the kill:\n" << j.output;
  EXPECT_EQ(count_lines_with(j.output, "trained"), 0) << j.output;
}

// Rank 1's options differ: refused on every rank before any batch, one line
// from rank 0 naming the first differing option, exit 2.
TEST(MpiFaults, MismatchedOptionsAreRefusedWithOneLine) {
  const Job j = run_job("options");
  EXPECT_EQ(j.status, 2) << j.output;
  EXPECT_LT(j.seconds, kWithin) << j.output;
  EXPECT_EQ(count_lines_with(j.output, "rank 1's options differ from rank 0's: 'lr=0.1' vs 'lr=0.05'"), 1) << j.output;
  EXPECT_EQ(count_lines_with(j.output, "trained"), 0) << j.output;
}

}  // namespace
