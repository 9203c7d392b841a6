// test_step_memory.cpp — a step's buffers come from its graph slot
// (core/memory/step_memory.h), so a steady step two batches later has the same
// addresses; a buffer the frontend still holds is never handed out again; an
// op that stages through the host inside a step makes it run eagerly.
#include <gtest/gtest.h>

#include <vector>

#include "test_util.h"

namespace amlp::testing {
namespace {

const Device kCpu = Device::cpu(0);

// Step graphs and step memory on cpu:0 for one test.
struct StepGraphs {
  StepGraphStats stats;
  ScopedStepGraph on{{kCpu}, stats};
};

const void* address(const Tensor& t) { return detail::storage_of(t)->data(); }

// One step: y = 2·x + 1 in two ops; returns y (and its intermediate in `mid`).
Tensor step(const Tensor& x, Tensor* mid = nullptr) {
  begin_step_memory(kCpu);
  begin_step(kCpu);
  Tensor m = scale(x, 2.f);
  Tensor y = add_scalar(m, 1.f);
  end_step(kCpu);
  end_step_memory(kCpu);
  if (mid) *mid = m;
  return y;
}

TEST(StepMemory, AStepTwoBatchesLaterGetsTheSameAddressesAndReplays) {
  StepGraphs g;
  const std::vector<float> v{1, 2, 3, 4};
  const Tensor x = from_host({4}, v.data(), kCpu);
  std::vector<const void*> seen;
  for (int b = 0; b < 8; ++b) {
    Tensor mid;
    const Tensor y = step(x, &mid);
    EXPECT_EQ(y.to_host(), (std::vector<float>{3, 5, 7, 9}));
    if (b >= 2) EXPECT_EQ(address(y), seen[seen.size() - 2]) << "batch " << b;
    seen.push_back(address(y));
  }
  const StepGraphStats s = step_graph_stats(kCpu);
  EXPECT_EQ(s.captured, 2u);
  EXPECT_EQ(s.replayed, 4u);
  EXPECT_EQ(s.updated, 0u);
  EXPECT_GT(s.slot_bytes, 0u);
}

TEST(StepMemory, ABufferTheFrontendStillHoldsIsNeverHandedOutAgain) {
  StepGraphs g;
  const std::vector<float> v{1, 2, 3, 4};
  const Tensor x = from_host({4}, v.data(), kCpu);
  std::vector<Tensor> kept;  // every batch's output escapes the step
  for (int b = 0; b < 6; ++b) kept.push_back(step(x));
  for (size_t i = 0; i < kept.size(); ++i)
    for (size_t j = 0; j < i; ++j) EXPECT_NE(address(kept[i]), address(kept[j])) << i << ", " << j;
  for (const Tensor& y : kept) EXPECT_EQ(y.to_host(), (std::vector<float>{3, 5, 7, 9}));
  EXPECT_EQ(step_graph_stats(kCpu).replayed, 0u) << "an escaping output changes the step's addresses";
}

// A buffer held only by ops still queued is handed out again (the same
// Storage): its new writer runs after those reads, in queue order.
TEST(StepMemory, ABufferHeldOnlyByQueuedOpsIsReusedInQueueOrder) {
  StepGraphs g;
  const std::vector<float> v{1, 2, 3, 4};
  const Tensor x = from_host({4}, v.data(), kCpu);
  waitall();
  std::vector<Tensor> outs;
  std::vector<const void*> mids;
  {
    QueuePause pause(kCpu);  // nothing runs: every read below stays queued
    for (int b = 0; b < 6; ++b) {
      begin_step_memory(kCpu);
      begin_step(kCpu);
      Tensor mid = scale(x, float(b));
      end_step(kCpu);
      end_step_memory(kCpu);
      outs.push_back(add_scalar(mid, 0.f));  // reads this batch's mid; the handle goes, the queued read stays
      mids.push_back(address(mid));
    }
  }
  for (int b = 2; b < 6; ++b) EXPECT_EQ(mids[b], mids[b - 2]) << "batch " << b;
  for (int b = 0; b < 6; ++b) EXPECT_EQ(outs[b].to_host(), (std::vector<float>{1.f * b, 2.f * b, 3.f * b, 4.f * b}));
}

TEST(StepMemory, AnOpThatStagesThroughTheHostInsideAStepRunsItEagerly) {
  StepGraphs g;
  const std::vector<float> v{1, 2, 3, 4};
  const Tensor x = from_host({4}, v.data(), kCpu);
  for (int b = 0; b < 3; ++b) step(x);  // learned, captured
  ASSERT_EQ(step_graph_stats(kCpu).captured, 1u);
  begin_step_memory(kCpu);
  begin_step(kCpu);
  const Tensor m = scale(x, 2.f);
  HostCopy h = m.to_host_async();  // declared as waiting for the host
  const Tensor y = add_scalar(m, 1.f);
  end_step(kCpu);
  end_step_memory(kCpu);
  EXPECT_EQ(h.get(), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(y.to_host(), (std::vector<float>{3, 5, 7, 9}));
  const StepGraphStats s = step_graph_stats(kCpu);
  EXPECT_EQ(s.invalidations, 1u);
  EXPECT_NE(s.last_reason.find("'to_host_async'"), std::string::npos) << s.last_reason;
  EXPECT_NE(s.last_reason.find("waits for the host"), std::string::npos) << s.last_reason;
}

}  // namespace
}  // namespace amlp::testing
