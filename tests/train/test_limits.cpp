// Covers the programs' side of framework/core/env.cpp: train_mlp under a
// library switch of the environment set to a value it does not take.
#include <gtest/gtest.h>

#include <string>

#include "train_test_util.h"

namespace amlp::testing {
namespace {

// One line naming the variable and its value, and no batch runs: garbage
// never means on (it used to for ASYNCMLP_BLOCKING, and "0" meant on for
// ASYNCMLP_POPULATOR_NORMAL). The status is 1 while train/train_mlp.cpp
// reports EnvError as a failed run; 2 (bad input, as async_demo) once it
// calls check_environment() before the run.
TEST(TrainMlpEnvironment, ASwitchSetToAnythingButZeroOrOneStopsTheRun) {
  for (const char* env : {"ASYNCMLP_BLOCKING=garbage", "ASYNCMLP_POPULATOR_NORMAL=true", "ASYNCMLP_SEGMENTS=no",
                          "ASYNCMLP_LT=on"}) {
    const std::string name(env, std::string(env).find('='));
    const std::string value = std::string(env).substr(name.size() + 1);
    Ran r = run_command(std::string("env ") + env + " " + program_path("train_mlp") +
                        " --device cpu --batches 2 --batch-size 8 --hidden 4");
    EXPECT_TRUE(r.code == 1 || r.code == 2) << env << ": exit " << r.code << "\n" << r.err;
    EXPECT_EQ(r.err, "train_mlp: error: environment variable " + name + " must be 0 or 1 (got '" + value + "')\n")
        << env;
    EXPECT_EQ(r.out.find("batch "), std::string::npos) << env << ": a batch ran\n" << r.out;
  }
  // 0 and 1 and empty still run.
  for (const char* env : {"ASYNCMLP_BLOCKING=1", "ASYNCMLP_POPULATOR_NORMAL=0", "ASYNCMLP_SEGMENTS=", "ASYNCMLP_LT=0"}) {
    Ran r = run_command(std::string("env ") + env + " " + program_path("train_mlp") +
                        " --device cpu --batches 2 --batch-size 8 --hidden 4 --quiet");
    EXPECT_EQ(r.code, 0) << env << ": " << r.err;
  }
}

}  // namespace
}  // namespace amlp::testing
