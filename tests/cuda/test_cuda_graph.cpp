// Covers framework/cuda/stream_graph.cpp, framework/core/memory/segments.cpp, framework/cuda/device_times.cpp (through train_mlp on a GPU).
// on a GPU: step graphs (--graph on) train exactly like
// eager launches, the steady batches are recorded and launched as graphs, a
// change of shape falls back; the segment carver (the default; ASYNCMLP_SEGMENTS=0
// gives each block its own cudaMalloc) trains the same and tracks the same blocks; a trace has the device's own track. Skipped without a GPU.
#include <gtest/gtest.h>

#include <fstream>
#include "framework/json.h"
#include <string>

#include "test_util.h"
#include "train/train_test_util.h"

namespace amlp::testing {
namespace {

const std::string kRun = "--device cuda:0 --batches 8 --batch-size 256 --features 64 --hidden 128,32 --seed 9 --quiet ";

amlp::Json summary(const std::string& args, const std::string& env = "") {
  return summary_of(env + " " + program_path("train_mlp") + " " + kRun + args);
}

TEST(CudaGraph, HeldStepsTrainLikeEagerLaunches) {
  SKIP_WITHOUT_GPU();
  for (const char* sync : {"--sync batch", "--sync none"}) {
    const amlp::Json off = summary(std::string(sync) + " --graph off");
    const amlp::Json on = summary(std::string(sync) + " --graph on");
    EXPECT_EQ(off.at("final_loss").get<double>(), on.at("final_loss").get<double>()) << sync;
    const amlp::Json& g = on.at("graph");
    EXPECT_EQ(g.at("captured").get<int>(), 2) << json_text(g);  // both graph slots
    EXPECT_EQ(g.at("invalidations").get<int>(), 0) << json_text(g);
  }
}

// In --sync none the increase is the backlog when the loop ends, which
// depends on how far the GPU got (a batch's input more or less): the tracked
// blocks are compared where they do not depend on timing, in --sync batch.
TEST(CudaGraph, SegmentsTrainLikeOneMallocPerBlock) {
  SKIP_WITHOUT_GPU();
  for (const char* sync : {"--sync none", "--sync batch"}) {
    const amlp::Json plain = summary(sync, "ASYNCMLP_SEGMENTS=0");
    const amlp::Json carved = summary(sync);
    EXPECT_EQ(plain.at("final_loss").get<double>(), carved.at("final_loss").get<double>()) << sync;
    if (std::string(sync) == "--sync batch")
      EXPECT_EQ(plain.at("mem_increase_bytes").get<size_t>(), carved.at("mem_increase_bytes").get<size_t>());
  }
}

TEST(CudaGraph, ATraceHasTheDevicesOwnTrack) {
  SKIP_WITHOUT_GPU();
  ScratchDir dir;
  const Ran r = run_train_mlp(kRun + "--sync batch --trace " + dir.file("t.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  const amlp::Json t = amlp::Json::parse(read_file(dir.file("t.json")));
  int device_tid = -1, spans = 0;
  for (const auto& e : t.at("traceEvents"))
    if (e.value("ph", "") == "M" && e.at("args").value("name", "") == "device cuda:0") device_tid = e.at("tid").get<int>();
  ASSERT_NE(device_tid, -1) << "no device track";
  for (const auto& e : t.at("traceEvents"))
    if (e.value("ph", "") == "X" && e.at("tid") == device_tid) ++spans;
  EXPECT_GT(spans, 8 * 10) << "each batch's ops on the GPU's own track";
}

}  // namespace
}  // namespace amlp::testing
