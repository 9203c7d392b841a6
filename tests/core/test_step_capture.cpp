// test_step_capture.cpp — the step capture on its own (step_capture.h): no
// queue, no worker thread. A fake host stands for the queue's worker and
// notes what the step capture asked of it; a fake StreamSync records like a CUDA
// stream under capture. The step capture must hand a steady step to its host as
// one graph launch, fall back to the held ops one by one, in order, when a
// recording or replay fails (the queue's kept error as before, the reason
// kept), and name the step a later device fault may belong to.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/core/graph/step_capture.h"
#include "framework/error.h"

namespace amlp {
namespace {

struct FakeSync : StreamSync {
  int begins = 0, ends = 0, replays = 0, drops = 0;
  bool fail_end = false, fail_replay = false;
  bool capture_begin(int) override {
    ++begins;
    return true;
  }
  void capture_end(int, uint64_t) override {
    ++ends;
    if (fail_end) throw Error("instantiate failed");
  }
  bool replay(int, uint64_t) override {
    ++replays;
    if (fail_replay) throw Error("graph launch failed");
    return true;
  }
  void drop_graph() noexcept override { ++drops; }
};

// Notes each call as "<what> <op name>".
struct FakeHost : StepHost {
  std::vector<std::string> calls;
  std::exception_ptr kept;
  bool run_keeps_error = false;  // a run during the recording keeps an error (as a failed launch check would)
  void execute_and_announce(QueuedOp& op) override {
    calls.push_back(std::string("execute ") + op.name);
    if (op.kernel) op.kernel(OpArgs(nullptr, 0, 0, op.name, &op.bufs.scalars));
  }
  void allocate_outputs(QueuedOp& op) override { calls.push_back(std::string("allocate ") + op.name); }
  bool run(QueuedOp& op) override {
    calls.push_back(std::string("run ") + op.name);
    if (run_keeps_error) kept = std::make_exception_ptr(Error("kept by the recording"));
    return true;
  }
  void finish_and_announce(QueuedOp& op) override { calls.push_back(std::string("finish ") + op.name); }
  std::exception_ptr kept_error() override { return kept; }
  void restore_error(std::exception_ptr e) override { kept = std::move(e); }
  bool dropped(uint64_t) const override { return false; }
};

// The frontend's and the worker's side of one step of ops "a", "b", "c"
// with seqs from `first`: held ones are parked, the marker run. Returns the verdict.
StepVerdict step(StepCapture& steps, StepHost& host, uint64_t first, std::vector<int>* ran = nullptr) {
  static const char* const kNames[] = {"a", "b", "c"};
  steps.begin();
  std::vector<QueuedOp> queued;
  for (int i = 0; i < 3; ++i) {
    OpBuffers bufs;
    bufs.scalars_declared = true;
    bufs.scalars = {uint64_t(i)};
    const bool held = steps.hold(kNames[i], bufs);
    BoundKernel k;
    if (ran) k = [ran](const OpArgs& a) { ran->push_back(a.scalar_int(0)); };
    queued.push_back(QueuedOp{kNames[i], first + i, k, std::move(bufs), {}, held ? OpRole::Held : OpRole::Op});
  }
  QueuedOp marker{};
  bool queue_marker = false;
  const StepVerdict v = steps.end(marker, queue_marker);
  if (queue_marker) queued.push_back(std::move(marker));
  for (QueuedOp& op : queued) {  // as the worker takes them
    if (op.role == OpRole::Held) steps.park(std::move(op));
    else if (op.role == OpRole::StepEnd) steps.run(op, host);
    else host.execute_and_announce(op);
  }
  return v;
}

using Calls = std::vector<std::string>;

// Warm-up 1: the first step is learned, the second matches it and arms the
// steps (ops #1-#6, both eager); the third step (ops #7-#9) is held.
void learn(StepCapture& steps, FakeHost& host, std::vector<int>* ran = nullptr) {
  EXPECT_EQ(step(steps, host, 1, ran), StepVerdict::Eager);
  EXPECT_EQ(step(steps, host, 4, ran), StepVerdict::Eager);
  EXPECT_EQ(host.calls, (Calls{"execute a", "execute b", "execute c", "execute a", "execute b", "execute c"}));
  host.calls.clear();
}

TEST(StepCapture, ASteadyStepReachesItsHostAsOneGraphLaunch) {
  FakeSync sync;
  FakeHost host;
  StepCapture steps("cpu:0", &sync, 0);
  steps.set(1);
  learn(steps, host);
  EXPECT_EQ(step(steps, host, 7), StepVerdict::Capture);
  EXPECT_EQ(host.calls, (Calls{"allocate a", "allocate b", "allocate c", "run a", "run b", "run c", "finish a",
                               "finish b", "finish c"}));
  EXPECT_EQ(sync.begins, 1);
  EXPECT_EQ(sync.ends, 1);
  host.calls.clear();
  EXPECT_EQ(step(steps, host, 10), StepVerdict::Replay);
  EXPECT_EQ(host.calls, (Calls{"finish a", "finish b", "finish c"})) << "a replay runs no op: one graph launch";
  EXPECT_EQ(sync.replays, 1);
  const StepGraphStats s = steps.stats();
  EXPECT_EQ(s.captured, 1u);
  EXPECT_EQ(s.replayed, 1u);
  EXPECT_EQ(s.capture_failures, 0u);
}

TEST(StepCapture, WithoutDeviceGraphsAReplayRunsTheKeptKernelsOneByOne) {
  FakeHost host;
  StepCapture steps("cpu:0", nullptr, 0);
  steps.set(1);
  std::vector<int> ran;
  learn(steps, host, &ran);
  EXPECT_EQ(step(steps, host, 7, &ran), StepVerdict::Capture);
  host.calls.clear();
  EXPECT_EQ(step(steps, host, 10, nullptr), StepVerdict::Replay);  // this step's ops carry no kernel
  EXPECT_EQ(host.calls, (Calls{"execute a", "execute b", "execute c"}));
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2})) << "the replay ran the kernels the capture kept";
}

TEST(StepCapture, AFailedRecordingRunsTheHeldOpsOneByOneAndPutsTheKeptErrorBack) {
  FakeSync sync;
  FakeHost host;
  StepCapture steps("cpu:0", &sync, 0);
  steps.set(1);
  learn(steps, host);
  const std::exception_ptr before = std::make_exception_ptr(Error("kept before the step"));
  host.kept = before;
  host.run_keeps_error = true;
  sync.fail_end = true;
  EXPECT_EQ(step(steps, host, 7), StepVerdict::Capture);
  EXPECT_EQ(host.calls, (Calls{"allocate a", "allocate b", "allocate c", "run a", "run b", "run c", "execute a",
                               "execute b", "execute c"}));
  EXPECT_EQ(host.kept, before) << "what the recording kept is undone";
  EXPECT_EQ(sync.drops, 1);
  const StepGraphStats s = steps.stats();
  EXPECT_EQ(s.capture_failures, 1u);
  EXPECT_NE(s.last_reason.find("instantiate failed"), std::string::npos) << s.last_reason;
  EXPECT_NE(s.last_reason.find("recording its 3 ops"), std::string::npos) << s.last_reason;
}

TEST(StepCapture, AFailedReplayRunsTheHeldOpsOneByOneAndTheRecogniserStartsOver) {
  FakeSync sync;
  FakeHost host;
  StepCapture steps("cpu:0", &sync, 0);
  steps.set(1);
  learn(steps, host);
  step(steps, host, 7);
  host.calls.clear();
  sync.fail_replay = true;
  EXPECT_EQ(step(steps, host, 10), StepVerdict::Replay);
  EXPECT_EQ(host.calls, (Calls{"execute a", "execute b", "execute c"}));
  EXPECT_NE(steps.stats().last_reason.find("graph launch failed"), std::string::npos);
  host.calls.clear();
  // The next push shows the failure to the recogniser: it learns again, nothing held.
  EXPECT_EQ(step(steps, host, 13), StepVerdict::Eager);
  EXPECT_EQ(host.calls, (Calls{"execute a", "execute b", "execute c"}));
}

TEST(StepCapture, AReleasedStepQueuesAnEagerMarker) {
  FakeSync sync;
  FakeHost host;
  StepCapture steps("cpu:0", &sync, 0);
  steps.set(1);
  learn(steps, host);
  steps.begin();
  OpBuffers bufs;
  bufs.scalars_declared = true;
  bufs.scalars = {0};
  ASSERT_TRUE(steps.hold("a", bufs));
  steps.park(QueuedOp{"a", 7, nullptr, std::move(bufs), {}, OpRole::Held});
  QueuedOp marker{};
  ASSERT_TRUE(steps.release("a blocker waited inside the step", marker));
  EXPECT_EQ(marker.role, OpRole::StepEnd);
  EXPECT_EQ(marker.verdict, StepVerdict::Eager);
  steps.run(marker, host);
  EXPECT_EQ(host.calls, (Calls{"execute a"}));
  EXPECT_FALSE(steps.parked());
  QueuedOp again{};
  EXPECT_FALSE(steps.release("twice", again)) << "nothing is held any more";
}

TEST(StepCapture, AFaultNoteNamesTheLastStepLaunchedAsOneGraph) {
  FakeSync sync;
  FakeHost host;
  StepCapture steps("cpu:0", &sync, 0);
  steps.set(1);
  learn(steps, host);
  EXPECT_EQ(steps.fault_note(6), "") << "no graph ran yet";
  step(steps, host, 7);  // step 3, ops #7-#9, one graph
  const std::string note = steps.fault_note(9);
  EXPECT_NE(note.find("ops #7-#9 ran as one step graph: step 3"), std::string::npos) << note;
  EXPECT_EQ(steps.fault_note(6), "") << "an op before the graph is not in it";
}

TEST(StepCapture, OffItHoldsNothing) {
  FakeSync sync;
  FakeHost host;
  StepCapture steps("cpu:0", &sync, 0);
  EXPECT_FALSE(steps.on());
  for (uint64_t first : {1, 4, 7}) EXPECT_EQ(step(steps, host, first), StepVerdict::Eager);
  EXPECT_EQ(host.calls.size(), 9u);
  EXPECT_EQ(sync.begins + sync.replays, 0);
}

}  // namespace
}  // namespace amlp
