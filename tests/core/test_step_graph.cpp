// The steady-step recogniser: when a queue's batches may be captured as one
// graph and replayed, and when that must stop.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/core/graph/step_graph.h"

namespace amlp {
namespace {

using Step = std::vector<OpSignature>;

OpSignature sig(const char* name, std::vector<size_t> bytes, std::vector<const void*> addresses,
                OpTraits traits = {}) {
  OpSignature s;
  s.name = name;
  s.bytes = std::move(bytes);
  s.addresses = std::move(addresses);
  s.traits = traits;
  return s;
}

// A training step's shape: data, forward, backward, update; `base` moves
// every address (another block from the pool).
Step mlp_step(uintptr_t base = 0x1000, size_t rows = 64) {
  const auto a = [&](uintptr_t k) { return reinterpret_cast<const void*>(base + k * 0x100); };
  return {
      sig("random_normal", {rows * 512 * 4}, {a(1)}),
      sig("fill", {rows * 4}, {a(2)}),
      sig("gemm", {rows * 512 * 4, 512 * 256 * 4, rows * 256 * 4}, {a(1), a(3), a(4)}),
      sig("relu", {rows * 256 * 4, rows * 256 * 4}, {a(4), a(5)}),
      sig("l2_loss", {rows * 256 * 4, rows * 4, rows * 4}, {a(5), a(2), a(6)}),
      sig("sgd_update", {512 * 256 * 4, 512 * 256 * 4}, {a(3), a(7)}),
  };
}

struct Fed {
  std::vector<StepVerdict> verdicts;
  std::vector<std::vector<bool>> held;
};

Fed feed(StepRecogniser& r, const std::vector<Step>& steps) {
  Fed out;
  for (const Step& s : steps) {
    out.held.emplace_back();
    for (const OpSignature& op : s) out.held.back().push_back(r.op(op));
    out.verdicts.push_back(r.end_step());
  }
  return out;
}

using V = StepVerdict;

TEST(StepGraph, ASteadyLoopIsCapturedOnceThenReplayed) {
  StepRecogniser r(/*warmup=*/1);
  const Fed run = feed(r, std::vector<Step>(6, mlp_step()));
  EXPECT_EQ(run.verdicts, (std::vector<V>{V::Eager, V::Eager, V::Capture, V::Replay, V::Replay, V::Replay}));
  for (size_t i = 0; i < 2; ++i)  // learning: nothing held
    for (bool h : run.held[i]) EXPECT_FALSE(h);
  for (size_t i = 2; i < 6; ++i)  // armed: every op held for the verdict
    for (bool h : run.held[i]) EXPECT_TRUE(h);
  EXPECT_EQ(r.stats().steps, 6u);
  EXPECT_EQ(r.stats().captured, 1u);
  EXPECT_EQ(r.stats().replayed, 3u);
  EXPECT_EQ(r.stats().eager, 2u);
  EXPECT_EQ(r.stats().invalidations, 0u);
  EXPECT_TRUE(r.has_graph());
}

TEST(StepGraph, AWarmupOfThreeNeedsThreeMatchingSteps) {
  StepRecogniser r(/*warmup=*/3);
  const Fed run = feed(r, std::vector<Step>(6, mlp_step()));
  EXPECT_EQ(run.verdicts, (std::vector<V>{V::Eager, V::Eager, V::Eager, V::Eager, V::Capture, V::Replay}));
}

TEST(StepGraph, TwoAlternatingSetsOfBuffersGetAGraphEach) {
  StepRecogniser r(1);
  // The pool hands out two sets of blocks in turn.
  std::vector<Step> steps;
  for (int i = 0; i < 7; ++i) steps.push_back(mlp_step(i % 2 ? 0x9000 : 0x1000));
  const Fed run = feed(r, steps);
  EXPECT_EQ(run.verdicts,
            (std::vector<V>{V::Eager, V::Eager, V::Capture, V::Capture, V::Replay, V::Replay, V::Replay}));
  EXPECT_EQ(r.slot(), 0);  // step 7 has step 3's blocks
  EXPECT_EQ(r.stats().captured, 2u);
  EXPECT_EQ(r.stats().invalidations, 0u);
}

TEST(StepGraph, MovedBuffersUpdateTheLeastRecentlyUsedGraph) {
  StepRecogniser r(1);
  std::vector<Step> steps;
  for (int i = 0; i < 6; ++i) steps.push_back(mlp_step(0x1000 + 0x10000 * (i % 3)));  // three sets in turn
  const Fed run = feed(r, steps);
  EXPECT_EQ(run.verdicts, (std::vector<V>{V::Eager, V::Eager, V::Capture, V::Capture, V::Update, V::Update}));
  EXPECT_EQ(r.stats().updated, 2u);
  EXPECT_EQ(r.stats().invalidations, 0u);
}

TEST(StepGraph, AnotherRandomOffsetUpdatesTheGraph) {
  // A replay launches the kernels with the arguments they were captured
  // with: a draw's offset that moves every batch must update the graph.
  StepRecogniser r(1);
  std::vector<Step> steps;
  for (uint64_t i = 0; i < 5; ++i) {
    steps.push_back(mlp_step());
    steps.back()[0].scalars = {1, i * 512 * 64};  // seed, offset
  }
  EXPECT_EQ(feed(r, steps).verdicts, (std::vector<V>{V::Eager, V::Eager, V::Capture, V::Capture, V::Update}));
}

TEST(StepGraph, AnAddressNotKnownYetIsNeverReplayedStale) {
  // Allocation policy run: outputs get their blocks when the op starts.
  StepRecogniser r(1);
  Step s = mlp_step();
  s[1].addresses = {nullptr};
  EXPECT_EQ(feed(r, std::vector<Step>(5, s)).verdicts,
            (std::vector<V>{V::Eager, V::Eager, V::Capture, V::Capture, V::Update}));
}

TEST(StepGraph, AShapeChangeReleasesTheHeldOpsAndDropsTheGraph) {
  StepRecogniser r(1);
  feed(r, std::vector<Step>(4, mlp_step()));  // captured and replayed once
  ASSERT_TRUE(r.has_graph());
  Step changed = mlp_step(0x1000, 32);  // a smaller batch: every size differs
  changed[0] = mlp_step()[0];           // ... except the first op's
  const Fed run = feed(r, {changed});
  EXPECT_EQ(run.verdicts, (std::vector<V>{V::Eager}));
  EXPECT_TRUE(run.held[0][0]);   // held, then run eagerly before the op that differs
  EXPECT_FALSE(run.held[0][1]);  // 'fill' with another size: holding ends here
  for (size_t i = 2; i < changed.size(); ++i) EXPECT_FALSE(run.held[0][i]);
  EXPECT_FALSE(r.has_graph());
  EXPECT_EQ(r.stats().invalidations, 1u);
  EXPECT_NE(r.stats().last_reason.find("op #2"), std::string::npos) << r.stats().last_reason;
  EXPECT_NE(r.stats().last_reason.find("'fill'"), std::string::npos) << r.stats().last_reason;
  // The new shape, steady again: learned, captured anew, replayed.
  const Fed again = feed(r, std::vector<Step>(3, changed));
  EXPECT_EQ(again.verdicts, (std::vector<V>{V::Eager, V::Capture, V::Replay}));
}

TEST(StepGraph, AShorterOrLongerStepIsNotReplayed) {
  StepRecogniser r(1);
  feed(r, std::vector<Step>(3, mlp_step()));
  Step shorter = mlp_step();
  shorter.pop_back();
  EXPECT_EQ(feed(r, {shorter}).verdicts, (std::vector<V>{V::Eager}));
  EXPECT_NE(r.stats().last_reason.find("after 5 of the captured step's 6 ops"), std::string::npos)
      << r.stats().last_reason;
  EXPECT_FALSE(r.has_graph());

  StepRecogniser l(1);
  feed(l, std::vector<Step>(3, mlp_step()));
  Step longer = mlp_step();
  longer.push_back(longer.back());
  const Fed run = feed(l, {longer});
  EXPECT_EQ(run.verdicts, (std::vector<V>{V::Eager}));
  EXPECT_FALSE(run.held[0].back());
  EXPECT_NE(l.stats().last_reason.find("past the captured step's end"), std::string::npos) << l.stats().last_reason;
}

// Whether a step may be recorded follows what its ops declared (op_traits.h),
// whatever they are called.
TEST(StepGraph, AStepWithAnOpDeclaredUnrecordableIsNeverCaptured) {
  const OpTraits timer{/*waits_for_host=*/false, /*collective=*/false, /*recordable=*/false};
  for (const OpTraits& t : {kWaitsForHost, kCollectiveViaHost, timer}) {
    StepRecogniser r(1);
    Step s = mlp_step();
    s.push_back(sig("gemm", {4}, {reinterpret_cast<const void*>(0x42)}, t));  // a name like any kernel's
    const Fed run = feed(r, std::vector<Step>(5, s));
    for (V v : run.verdicts) EXPECT_EQ(v, V::Eager);
    for (const auto& h : run.held)
      for (bool b : h) EXPECT_FALSE(b);
    EXPECT_EQ(r.stats().captured, 0u);
  }
}

TEST(StepGraph, ACollectiveOrACopyIsRecognisedLikeAnyKernel) {
  for (const char* name : {"all_reduce", "nccl_all_reduce", "copy", "slice_rows"}) {
    StepRecogniser r(1);
    Step s = mlp_step();
    s.push_back(sig(name, {4, 4}, {reinterpret_cast<const void*>(0x42), reinterpret_cast<const void*>(0x43)},
                    std::string(name).find("all_reduce") != std::string::npos ? kCollective : OpTraits{}));
    const Fed run = feed(r, std::vector<Step>(4, s));
    EXPECT_EQ(run.verdicts, (std::vector<V>{V::Eager, V::Eager, V::Capture, V::Replay})) << name;
  }
}

TEST(StepGraph, AnArmedStepMeetingAnOpThatWaitsForTheHostFallsBackAndSaysWhy) {
  StepRecogniser r(1);
  feed(r, std::vector<Step>(3, mlp_step()));
  ASSERT_TRUE(r.has_graph());
  const Step s = mlp_step();
  EXPECT_TRUE(r.op(s[0]));
  EXPECT_FALSE(r.op(sig("random_normal", s[1].bytes, s[1].addresses, kWaitsForHost)));
  EXPECT_FALSE(r.holding());
  EXPECT_FALSE(r.has_graph());
  EXPECT_NE(r.stats().last_reason.find("waits for the host"), std::string::npos) << r.stats().last_reason;
}

// An optional buffer left undefined (size 0, no address) is not a block the
// op lacks: the step still replays.
TEST(StepGraph, AnUndefinedOptionalBufferStillReplays) {
  StepRecogniser r(1);
  Step s = mlp_step();
  s.push_back(sig("sgd_update", {16, 0}, {reinterpret_cast<const void*>(0x42), nullptr}));
  const Fed run = feed(r, std::vector<Step>(4, s));
  EXPECT_EQ(run.verdicts, (std::vector<V>{V::Eager, V::Eager, V::Capture, V::Replay}));
  Step unallocated = s;
  unallocated.back().bytes = {16, 16};  // a block taken only when the op starts (--alloc run)
  StepRecogniser u(1);
  EXPECT_EQ(feed(u, std::vector<Step>(5, unallocated)).verdicts,  // never the recorded block: both slots, then again
            (std::vector<V>{V::Eager, V::Eager, V::Capture, V::Capture, V::Update}));
}

TEST(StepGraph, AnInterruptReleasesTheStepAndLearningStartsOver) {
  StepRecogniser r(1);
  feed(r, std::vector<Step>(4, mlp_step()));
  ASSERT_TRUE(r.has_graph());
  const Step s = mlp_step();
  EXPECT_TRUE(r.op(s[0]));
  EXPECT_TRUE(r.op(s[1]));
  r.interrupt("a blocker waited inside the step");
  EXPECT_FALSE(r.holding());
  for (size_t i = 2; i < s.size(); ++i) EXPECT_FALSE(r.op(s[i]));
  EXPECT_EQ(r.end_step(), V::Eager);
  EXPECT_FALSE(r.has_graph());
  EXPECT_EQ(r.stats().invalidations, 1u);
  EXPECT_EQ(r.stats().last_reason, "a blocker waited inside the step");
  // Learning starts over: one eager step that matches the last one arms it again.
  const Fed run = feed(r, std::vector<Step>(3, s));
  EXPECT_EQ(run.verdicts, (std::vector<V>{V::Eager, V::Capture, V::Replay}));
}

TEST(StepGraph, EmptyStepsNeverArm) {
  StepRecogniser r(1);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(r.end_step(), V::Eager);
  EXPECT_FALSE(r.holding());
}

TEST(StepGraph, VerdictsHaveNames) {
  EXPECT_STREQ(to_string(V::Eager), "eager");
  EXPECT_STREQ(to_string(V::Capture), "capture");
  EXPECT_STREQ(to_string(V::Replay), "replay");
  EXPECT_STREQ(to_string(V::Update), "update");
}

}  // namespace
}  // namespace amlp
