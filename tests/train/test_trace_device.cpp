// test_trace_device.cpp — tools/trace_summary.py on a trace with a device
// track (a GPU's own op times beside the worker's launches), written here by
// hand: the GPU's busy time is the union of its ops, the gaps between them
// are idle, and each kernel's GPU time is summed.
#include <gtest/gtest.h>

#include <string>

#include "train_test_util.h"

namespace amlp::testing {
namespace {

const char* const kTrace = R"({"traceEvents": [
 {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "frontend"}},
 {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "queue cuda:0"}},
 {"ph": "M", "name": "thread_name", "pid": 1, "tid": 3, "args": {"name": "device cuda:0"}},
 {"ph": "X", "name": "batch", "pid": 1, "tid": 1, "ts": 0, "dur": 500},
 {"ph": "X", "name": "batch", "pid": 1, "tid": 1, "ts": 500, "dur": 500},
 {"ph": "X", "name": "matmul", "pid": 1, "tid": 2, "ts": 0, "dur": 10},
 {"ph": "X", "name": "relu", "pid": 1, "tid": 2, "ts": 10, "dur": 5},
 {"ph": "X", "name": "matmul", "pid": 1, "tid": 3, "ts": 0, "dur": 400},
 {"ph": "X", "name": "relu", "pid": 1, "tid": 3, "ts": 380, "dur": 120},
 {"ph": "X", "name": "matmul", "pid": 1, "tid": 3, "ts": 600, "dur": 300},
 {"ph": "X", "name": "relu", "pid": 1, "tid": 3, "ts": 900, "dur": 100}
]})";

TEST(TraceSummaryDevice, ReportsTheGpusBusyTimeGapsAndKernels) {
  ScratchDir dir;
  const std::string trace = dir.write("t.json", kTrace);
  const Ran r = run_command(host_python() + " " + source_file("tools/trace_summary.py") + " " + trace);
  ASSERT_EQ(r.code, 0) << r.err;
  // Overlapping ops count once: busy 0..500 and 600..1000.
  EXPECT_NE(r.out.find("device cuda:0 (GPU time): 2 batches, window 1.0 ms, busy 0.90 ms (90.0%), "
                       "idle 0.10 ms in 1 gaps (longest 0.100 ms, mean 100.0 us)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  matmul                        2      0.700     0.350   70.0%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  relu                          2      0.220     0.110   22.0%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("queue cuda:0: 2 batches"), std::string::npos) << "the launch track stays: " << r.out;
}

TEST(TraceSummaryDevice, ATraceWithoutADeviceTrackHasNoGpuSection) {
  ScratchDir dir;
  std::string t = kTrace;
  t.replace(t.find("device cuda:0"), 13, "other thread ");
  const Ran r = run_command(host_python() + " " + source_file("tools/trace_summary.py") + " " + dir.write("t.json", t));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("GPU time"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace amlp::testing
