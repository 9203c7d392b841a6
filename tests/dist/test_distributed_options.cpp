// Covers train/options/option_values.cpp, option_checks.cpp, train/runs/distributed_run.cpp (--distributed).
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

// What the ranks compare is every option as parsed, none listed by hand: an
// option another rank may not differ in (the data, the parameters loaded or
// saved, a study) is in it as surely as --lr.
TEST(DistributedOption, TheOptionsTextTellsRanksApart) {
  const auto settings = [](std::vector<std::string> args) {
    const ParseOutcome p = parse_options(args);
    EXPECT_EQ(p.status, ParseStatus::Run) << p.message;
    return p.options.settings;
  };
  const std::string a = settings({});
  EXPECT_NE(a.find("lr=0.005\n"), std::string::npos) << a;
  EXPECT_NE(a.find("compare=off\n"), std::string::npos) << a;
  EXPECT_EQ(settings({"--lr", "0.005"}), a) << "the default given or not reads alike";
  const std::string b = settings({"--lr", "0.01"});
  EXPECT_NE(b, a);
  EXPECT_NE(b.find("lr=0.01\n"), std::string::npos) << b;
  EXPECT_NE(settings({"--epochs", "3"}).find("epochs=3\n"), std::string::npos);
  EXPECT_NE(settings({"--sweep"}).find("sweep=on\n"), std::string::npos);
  EXPECT_NE(settings({"--save", "p.safetensors"}).find("save=p.safetensors\n"), std::string::npos);
  for (const char* key : {"data", "targets", "load", "save", "sweep", "sweep-fractions", "devices", "shuffle"})
    EXPECT_NE(a.find(std::string("\n") + key + "="), std::string::npos) << key << " is compared across ranks";
}

}  // namespace
}  // namespace amlp::train
