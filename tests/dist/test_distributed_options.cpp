// Covers train/options/options.cpp, train/runs/distributed_run.cpp (--distributed).
// --distributed through the option parser:
// its values, the refusal in a build without MPI (read_distributed, the
// parser's reader, told the build has none) and with --devices; each one
// line, exit 2. The runs under mpirun are tests/dist/mpi_train.cpp.
#include <gtest/gtest.h>

#include "framework/parse.h"
#include "framework/process_group.h"
#include "train/runs/distributed_run.h"
#include "train/options/options.h"

namespace amlp::train {
namespace {

TEST(DistributedOption, NoneByDefaultMpiWhenAsked) {
  EXPECT_FALSE(parse_options(std::vector<std::string>{}).options.distributed);
  const ParseOutcome p = parse_options({"--distributed", "none"});
  EXPECT_EQ(p.status, ParseStatus::Run);
  EXPECT_FALSE(p.options.distributed);
  const ParseOutcome m = parse_options({"--distributed", "mpi"});
  if (!dist::built_with_mpi()) {
    EXPECT_EQ(m.status, ParseStatus::Error);
    EXPECT_EQ(m.exit_code, kExitBadInput);
    return;
  }
  EXPECT_EQ(m.status, ParseStatus::Run) << m.message;
  EXPECT_TRUE(m.options.distributed);
}

TEST(DistributedOption, ABuildWithoutMpiRefusesItWithOneLineSayingWhy) {
  try {
    read_distributed("mpi", /*with_mpi=*/false);
    FAIL() << "accepted mpi without MPI";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.problem(), "mpi: this build has no MPI (configure with -DASYNCMLP_MPI=ON where an MPI is installed)");
  }
  EXPECT_FALSE(read_distributed("none", false));
  EXPECT_TRUE(read_distributed("mpi", true));
}

TEST(DistributedOption, OtherValuesAreRefused) {
  const ParseOutcome p = parse_options({"--distributed", "nccl"});
  EXPECT_EQ(p.status, ParseStatus::Error);
  EXPECT_EQ(p.exit_code, kExitBadInput);
  EXPECT_EQ(p.message, "--distributed must be none or mpi (got 'nccl')");
}

TEST(DistributedOption, DoesNotCombineWithDevices) {
  if (!dist::built_with_mpi()) GTEST_SKIP() << "no MPI in this build: --distributed mpi is refused before";
  const ParseOutcome p = parse_options({"--distributed", "mpi", "--devices", "cpu:0,cpu:1"});
  EXPECT_EQ(p.status, ParseStatus::Error);
  EXPECT_EQ(p.exit_code, kExitBadInput);
  EXPECT_EQ(p.message,
            "--devices and --distributed mpi do not combine: under mpirun each rank trains one replica on its --device");
}

TEST(DistributedOption, TheOptionsTextTellsRanksApart) {
  Options a = parse_options(std::vector<std::string>{}).options, b = a;
  b.lr = 0.01f;
  EXPECT_NE(options_text(a), options_text(b));
  EXPECT_NE(options_text(a).find("lr=0.005\n"), std::string::npos) << options_text(a);
  EXPECT_NE(options_text(b).find("lr=0.01\n"), std::string::npos);
  Options c = a;
  c.epochs = 3;  // ranks running different numbers of epochs would stop at different batches
  EXPECT_NE(options_text(a), options_text(c));
  EXPECT_NE(options_text(c).find("epochs=3\n"), std::string::npos) << options_text(c);
}

}  // namespace
}  // namespace amlp::train
