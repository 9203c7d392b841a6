// test_train_graph.cpp — train_mlp --graph: the option (command line and
// INI), the same training whether the batches' steps are held or not, the
// verdicts in the summary, and the modes where nothing is held.
#include <gtest/gtest.h>

#include <cmath>
#include <iomanip>
#include "framework/json.h"
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "sanitized.h"
#include "train/train_test_util.h"

namespace amlp::testing {
namespace {

const std::string kShape = "--device cpu --batches 8 --batch-size 64 --features 32 --hidden 64,16 --seed 5 --quiet ";

amlp::Json summary(const std::string& args) { return summary_of(program_path("train_mlp") + " " + kShape + args); }

TEST(TrainGraph, HeldStepsTrainExactlyLikeEagerOnes) {
  for (const char* sync : {"--sync batch", "--sync none", "--sync none --alloc run"}) {
    const amlp::Json off = summary(std::string(sync) + " --graph off");
    const amlp::Json on = summary(std::string(sync) + " --graph on");
    EXPECT_EQ(off.at("final_loss").get<double>(), on.at("final_loss").get<double>()) << sync;
    EXPECT_TRUE(off.at("graph").is_null());
    const amlp::Json& g = on.at("graph");
    EXPECT_EQ(g.at("steps").get<int>(), 8) << sync;
    EXPECT_EQ(g.at("eager").get<int>(), 2) << sync;  // learned from two batches alike
    EXPECT_EQ(g.at("captured").get<int>(), 2) << sync;  // both graph slots
    EXPECT_EQ(g.at("captured").get<int>() + g.at("replayed").get<int>() + g.at("updated").get<int>(), 6) << sync;
    EXPECT_EQ(g.at("invalidations").get<int>(), 0) << sync;
  }
}

// After the warm-up (two eager batches, one capture per graph slot) a steady
// batch gets the buffers its slot's graph was recorded with, so it replays:
// with the caching pool alone every batch had other addresses (0 replayed).
TEST(TrainGraph, SteadyStepsReplayAfterTheWarmUp) {
  const std::string shape = "--batches 60 --batch-size 64 --features 32 --hidden 64,16 --seed 5 --quiet --graph on ";
  for (const char* devices : {"--device cpu", "--devices cpu:0,cpu:1"})
    for (const char* sync : {"--sync batch", "--sync none"}) {
      const std::string args = std::string(devices) + " " + sync;
      const amlp::Json g = summary_of(program_path("train_mlp") + " " + shape + args).at("graph");
      const int held = g.at("captured").get<int>() + g.at("replayed").get<int>() + g.at("updated").get<int>();
      EXPECT_EQ(g.at("steps").get<int>(), 60) << args;
      EXPECT_EQ(held, 58) << args << ": " << json_text(g);
      const int steady = held - g.at("captured").get<int>();
      // Whether a slot's buffer is held by queued ops only is read without a
      // lock and errs on the safe side (framework/core/memory/memory.cpp): while a
      // worker has unpinned a buffer but not yet dropped it, the batch takes
      // another block and its graph is updated, not replayed. Under a
      // sanitizer's slower workers, with two devices, that window met 3 or 4
      // of 56 steady batches in one run of five: the bound is 95% in the
      // release build, 85% there (0% without step memory fails both).
      const double share = kSanitized ? 0.85 : 0.95;
      EXPECT_GE(g.at("replayed").get<int>(), share * steady) << args << ": " << json_text(g);
      EXPECT_EQ(g.at("invalidations").get<int>(), 0) << args << ": " << json_text(g);
      EXPECT_GT(g.at("slot_bytes").get<double>(), 0) << args;
    }
}

// With the slots' buffers recycled, an unsynchronized run's backlog no longer
// holds a batch's intermediates per queued batch: its memory increase stays
// near the two slots' bytes, far below the same run without graphs.
TEST(TrainGraph, AReplayedRunHoldsTheSlotsNotTheBacklog) {
  const std::string shape = "--batches 40 --batch-size 256 --features 128 --hidden 256,64 --seed 5 --quiet --sync none ";
  const amlp::Json off = summary_of(program_path("train_mlp") + " " + shape + "--device cpu --graph off");
  const amlp::Json on = summary_of(program_path("train_mlp") + " " + shape + "--device cpu --graph on");
  EXPECT_EQ(off.at("final_loss").get<double>(), on.at("final_loss").get<double>());
  const double slots = on.at("graph").at("slot_bytes").get<double>();
  EXPECT_LE(on.at("mem_increase_bytes").get<double>(), slots * 1.5) << json_text(on);
  EXPECT_LT(on.at("mem_increase_bytes").get<double>(), off.at("mem_increase_bytes").get<double>() / 4) << json_text(on);
  // The model: the batches queued, at most the two slots' (one batch's buffers each).
  EXPECT_LE(on.at("predicted_increase_bytes").get<double>(), 2 * on.at("bytes_per_batch").get<double>());
  EXPECT_NEAR(on.at("mem_increase_bytes").get<double>(), on.at("predicted_increase_bytes").get<double>(),
              0.1 * on.at("predicted_increase_bytes").get<double>());
}

TEST(TrainGraph, NothingIsHeldInSynchronousModeOrUnderBackPressure) {
  for (const char* mode : {"--blocking", "--max-pending 8"}) {
    const amlp::Json g = summary(std::string(mode) + " --sync none --graph on").at("graph");
    EXPECT_EQ(g.at("eager").get<int>(), 8) << mode;
    EXPECT_EQ(g.at("captured").get<int>(), 0) << mode;
  }
}

TEST(TrainGraph, TheOptionIsReadFromTheCommandLineAndTheConfig) {
  ScratchDir dir;
  const Ran ini = run_train_mlp(kShape + "--config " + dir.write("c.ini", "graph = on\n"));
  EXPECT_EQ(ini.code, 0) << ini.err;
  EXPECT_NE(ini.out.find("graph "), std::string::npos) << ini.out;
  const Ran bad = run_train_mlp(kShape + "--graph maybe");
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err_lines(), 1) << bad.err;
  EXPECT_NE(bad.err.find("must be off or on"), std::string::npos) << bad.err;
  const Ran off = run_train_mlp(kShape);
  EXPECT_EQ(off.out.find("  graph "), std::string::npos) << "off by default";
}

// docs/gpu.md quotes a run of configs/quick.ini with its steps held: how
// many batches replay and what the two slots and the backlog hold. The run
// again, and each figure against its summary, so the page cannot go stale.
TEST(TrainGraph, TheFiguresDocsGpuMdQuotes) {
  std::string doc = read_file(source_file("docs/gpu.md"));
  for (char& c : doc)
    if (c == '\n') c = ' ';
  const auto quoted = [&](const std::string& pattern) {
    std::smatch m;
    EXPECT_TRUE(std::regex_search(doc, m, std::regex(pattern))) << "docs/gpu.md no longer says /" << pattern << "/";
    return m.size() > 1 ? std::vector<std::string>(m.begin() + 1, m.end()) : std::vector<std::string>(8, "?");
  };
  const auto counts = quoted(R"(`configs/quick.ini` \((\d+) batches\), (\d+) of them in `--sync batch` and `--sync +)"
                             R"(none` \(`graph` in the summary: (\d+) eager, (\d+) captured, (\d+) replayed\))");
  const auto memory = quoted(R"(`quick\.ini --sync none --graph on` on the CPU: \+([0-9.]+) MB, two slots of +)"
                             R"(([0-9.]+) MB, where without graphs the backlog of all (\d+) batches holds \+(\d+) MB)");
  const auto mb = [](double bytes, int decimals) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(decimals) << bytes / 1e6;
    return o.str();
  };
  // The sanitizer builds run the first 30 of quick.ini's batches: the warm-up
  // (eager, captured) and the bytes are the page's; the steps held after it
  // are the page's less the batches not run.
  const int not_run = kSanitized ? std::stoi(counts[0]) - 30 : 0;
  const std::string quick = "--config " + source_file("configs/quick.ini") + " --device cpu --quiet --graph on " +
                            (not_run ? "--batches 30 " : "");
  for (const char* sync : {"batch", "none"}) {
    const amlp::Json s = summary_of(program_path("train_mlp") + " " + quick + "--sync " + sync);
    const amlp::Json& g = s.at("graph");
    const int captured = g.at("captured").get<int>();
    const int held = captured + g.at("replayed").get<int>() + g.at("updated").get<int>();
    EXPECT_EQ(counts[0], std::to_string(g.at("steps").get<int>() + not_run)) << sync;
    EXPECT_EQ(counts[1], std::to_string(held - captured + not_run)) << sync << ": " << json_text(g);
    EXPECT_EQ(counts[2], std::to_string(g.at("eager").get<int>())) << sync;
    EXPECT_EQ(counts[3], std::to_string(captured)) << sync;
    EXPECT_EQ(counts[4], std::to_string(held - captured + not_run)) << sync;
    // A steady batch whose slot buffer a worker was still dropping is updated
    // instead (SteadyStepsReplayAfterTheWarmUp): the page quotes a release run.
    EXPECT_GE(g.at("replayed").get<int>(), (kSanitized ? 0.85 : 0.95) * (held - captured)) << sync << ": " << json_text(g);
    if (std::string(sync) != "none") continue;
    const double per_batch = s.at("bytes_per_batch").get<double>(), slots = g.at("slot_bytes").get<double>();
    EXPECT_EQ(memory[0], mb(slots, 1)) << json_text(s);
    EXPECT_EQ(memory[1], mb(per_batch, 1)) << json_text(s);
    EXPECT_EQ(slots, 2 * per_batch);
    EXPECT_NEAR(s.at("mem_increase_bytes").get<double>(), slots, 0.1 * slots) << json_text(s);
    EXPECT_EQ(memory[2], counts[0]);
    EXPECT_EQ(memory[3], mb(std::stod(counts[0]) * per_batch, 0));
  }
}

}  // namespace
}  // namespace amlp::testing
