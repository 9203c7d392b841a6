// Covers framework/core/queue/queue.cpp, framework/core/graph/step_capture.cpp, framework/core/graph/step_graph.cpp (step graphs on a queue).
// step graphs on a queue: a steady step's ops are held
// until the step ends, then run one by one (no graph: the CPU) or launched as
// one recorded graph (a fake backend that records, standing for CUDA); any
// blocker, mismatch or failure falls back to running them in order.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "framework/core/queue/queue.h"
#include "framework/error.h"

namespace amlp {
namespace {

// Records like a CUDA stream under capture: kernels pushed while recording
// are only noted; capture_end launches them; replay() launches the last
// recording again.
struct RecordingSync : StreamSync {
  bool recording = false;
  int begins = 0, ends = 0, replays = 0, drops = 0;
  uint64_t last_seq = 0;
  bool fail_end = false, fail_replay = false;
  bool capture_begin(int) override {
    recording = true;
    ++begins;
    return true;
  }
  void capture_end(int, uint64_t last) override {
    recording = false;
    ++ends;
    last_seq = last;
    if (fail_end) throw Error("instantiate failed");
  }
  bool replay(int, uint64_t last) override {
    ++replays;
    last_seq = last;
    if (fail_replay) throw Error("graph launch failed");
    return true;
  }
  void drop_graph() noexcept override { ++drops; }
  bool fault_after_op = false;  // the next op's completion finds an earlier kernel faulted
  void after_op(uint64_t, bool) override {
    if (!fault_after_op) return;
    fault_after_op = false;
    throw DeviceFault("an illegal memory access was encountered");
  }
};

struct Step {
  std::vector<uint64_t> seqs;
};

// Pushes one step of `n` ops named "a", "b", ...; each appends its index to
// `ran` when its kernel runs and notes whether it ran under recording.
Step push_step(Queue& q, int n, std::vector<int>& ran, std::vector<bool>* recorded = nullptr,
               RecordingSync* sync = nullptr, bool declared = false) {
  static const char* const kNames[] = {"a", "b", "c", "d", "e", "f"};
  Step s;
  q.begin_step();
  for (int i = 0; i < n; ++i) {
    OpBuffers bufs;
    bufs.scalars_declared = declared;
    s.seqs.push_back(q.push(kNames[i], Queue::Kernel([&ran, recorded, sync, i](const OpArgs&) {
                              ran.push_back(i);
                              if (recorded) recorded->push_back(sync && sync->recording);
                            }),
                            std::move(bufs)));
  }
  return s;
}

TEST(QueueStep, WithoutGraphsAHeldStepRunsInOrderAtItsEnd) {
  Queue q("cpu:0", nullptr);
  q.set_step_graph(1);
  std::vector<int> ran;
  for (int b = 0; b < 2; ++b) {  // learning: eager
    push_step(q, 4, ran);
    EXPECT_EQ(q.end_step(), StepVerdict::Eager);
  }
  q.wait_all();
  ran.clear();
  const Step s = push_step(q, 4, ran);  // armed: held on the worker
  for (uint64_t seq : s.seqs) EXPECT_FALSE(q.launched(seq)) << "a held op ran before its step ended";
  EXPECT_EQ(q.end_step(), StepVerdict::Capture);
  q.wait_all();
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(q.step_graph_stats().captured, 1u);
}

TEST(QueueStep, ARecordingBackendLaunchesTheStepAsOneGraph) {
  RecordingSync sync;
  Queue q("fake:0", &sync);
  q.set_step_graph(1);
  std::vector<int> ran;
  std::vector<bool> recorded;
  for (int b = 0; b < 2; ++b) push_step(q, 3, ran, &recorded, &sync, true), q.end_step();
  q.wait_all();
  EXPECT_EQ(sync.begins, 0);
  ran.clear(), recorded.clear();
  const Step cap = push_step(q, 3, ran, &recorded, &sync, true);
  EXPECT_EQ(q.end_step(), StepVerdict::Capture);
  q.wait_all();
  EXPECT_EQ(sync.begins, 1);
  EXPECT_EQ(sync.ends, 1);
  EXPECT_EQ(sync.last_seq, cap.seqs.back());
  EXPECT_EQ(recorded, (std::vector<bool>{true, true, true}));  // every kernel launched into the recording
  ran.clear();
  const Step rep = push_step(q, 3, ran, &recorded, &sync, true);
  EXPECT_EQ(q.end_step(), StepVerdict::Replay);
  q.wait_all();
  EXPECT_TRUE(ran.empty()) << "a replayed step launched its kernels one by one";
  EXPECT_EQ(sync.replays, 1);
  EXPECT_EQ(sync.last_seq, rep.seqs.back());
  for (uint64_t seq : rep.seqs) EXPECT_TRUE(q.launched(seq));
}

TEST(QueueStep, OpsWithUndeclaredScalarsAreRecordedAgainEachStep) {
  RecordingSync sync;
  Queue q("fake:0", &sync);
  q.set_step_graph(1);
  std::vector<int> ran;
  for (int b = 0; b < 5; ++b) push_step(q, 3, ran), q.end_step();
  q.wait_all();
  EXPECT_EQ(sync.replays, 0);
  EXPECT_EQ(sync.begins, 3);  // steps 3, 4, 5: captured, then recorded again (the graph updated)
  const StepGraphStats st = q.step_graph_stats();  // counted as what they were: recorded again
  EXPECT_EQ(st.replayed, 0u);
  EXPECT_EQ(st.updated, 2u);
}

TEST(QueueStep, WithoutGraphsAReplayRunsTheRecordedKernels) {
  // Like a device graph, the replay launches what was recorded: here each
  // kernel's closure says which step made it. (An op whose closure holds a
  // value that changes must declare it: OpBuffers::scalars.)
  Queue q("cpu:0", nullptr);
  q.set_step_graph(1);
  std::vector<int> ran;
  for (int step = 1; step <= 4; ++step) {
    q.begin_step();
    for (int i = 0; i < 2; ++i) {
      OpBuffers bufs;
      bufs.scalars_declared = true;  // declared: nothing (the step number is not)
      q.push("op", Queue::Kernel([&ran, step](const OpArgs&) { ran.push_back(step); }), std::move(bufs));
    }
    q.end_step();
  }
  q.wait_all();
  EXPECT_EQ(ran, (std::vector<int>{1, 1, 2, 2, 3, 3, 3, 3})) << "step 4 replays step 3's kernels";
  EXPECT_EQ(q.step_graph_stats().replayed, 1u);
}

TEST(QueueStep, ABlockerInsideAHeldStepReleasesIt) {
  Queue q("cpu:0", nullptr);
  q.set_step_graph(1);
  std::vector<int> ran;
  for (int b = 0; b < 3; ++b) push_step(q, 3, ran), q.end_step();  // learned, then captured
  q.wait_all();
  ran.clear();
  const Step s = push_step(q, 3, ran);
  q.wait_for(s.seqs[1]);  // would never return if the held ops stayed held
  EXPECT_TRUE(q.launched(s.seqs[1]));
  EXPECT_EQ(q.end_step(), StepVerdict::Eager);
  q.wait_all();
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(q.step_graph_stats().invalidations, 1u);
  EXPECT_EQ(q.step_graph_stats().last_reason, "a blocker waited inside the step");
}

TEST(QueueStep, AStepThatStopsMatchingRunsItsHeldOpsFirst) {
  Queue q("cpu:0", nullptr);
  q.set_step_graph(1);
  std::vector<int> ran;
  for (int b = 0; b < 3; ++b) push_step(q, 3, ran), q.end_step();
  q.wait_all();
  ran.clear();
  push_step(q, 2, ran);  // held: they match
  q.push("other", [&ran] { ran.push_back(9); });  // not 'c': holding ends, the held ops run first
  EXPECT_EQ(q.end_step(), StepVerdict::Eager);
  q.wait_all();
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 9}));
}

TEST(QueueStep, AFailedRecordingRunsTheStepOneByOne) {
  RecordingSync sync;
  sync.fail_end = true;
  Queue q("fake:0", &sync);
  q.set_step_graph(1);
  std::vector<int> ran;
  for (int b = 0; b < 2; ++b) push_step(q, 3, ran), q.end_step();
  q.wait_all();
  ran.clear();
  push_step(q, 3, ran, nullptr, &sync, true);
  EXPECT_EQ(q.end_step(), StepVerdict::Capture);
  q.wait_all();  // no error: the step ran eagerly after the recording failed
  EXPECT_EQ(sync.drops, 1);
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 0, 1, 2}));  // recorded (not run on a GPU), then run
  push_step(q, 3, ran, nullptr, &sync, true);  // the next step learns again
  EXPECT_EQ(q.end_step(), StepVerdict::Eager);
  q.wait_all();  // before `ran` goes
  EXPECT_NE(q.step_graph_stats().last_reason.find("a recorded step failed"), std::string::npos);
}

// A step of three ops that each write one value from the one before
// (1, 3, 7); the middle one fails when launched into a recording, as a
// kernel that cannot be captured would.
Step push_chain(Queue& q, std::vector<int>& out, RecordingSync& sync) {
  Step s;
  q.begin_step();
  for (int i = 0; i < 3; ++i) {
    OpBuffers bufs;
    bufs.scalars_declared = true;
    s.seqs.push_back(q.push("chain", Queue::Kernel([&out, &sync, i](const OpArgs&) {
                              if (i == 1 && sync.recording) throw Error("not capturable");
                              out[i] = (i == 0 ? 0 : out[i - 1]) * 2 + 1;
                            }),
                            std::move(bufs)));
  }
  return s;
}

TEST(QueueStep, AFailedRecordingRunsTheHeldOpsEagerlyAndSaysWhy) {
  RecordingSync sync;
  sync.fail_end = true;
  Queue q("fake:0", &sync);
  q.set_step_graph(1);
  std::vector<int> out(3, 0);
  for (int b = 0; b < 2; ++b) push_chain(q, out, sync), q.end_step();
  q.wait_all();
  out.assign(3, 0);
  const Step s = push_chain(q, out, sync);
  EXPECT_EQ(q.end_step(), StepVerdict::Capture);
  EXPECT_NO_THROW(q.wait_all()) << "the recording's own failure was reported as the step's";
  EXPECT_EQ(out, (std::vector<int>{1, 3, 7}));  // the graph never ran: the ops did, one by one
  for (uint64_t seq : s.seqs) EXPECT_TRUE(q.launched(seq));
  EXPECT_EQ(sync.drops, 1);
  const StepGraphStats st = q.step_graph_stats();
  EXPECT_EQ(st.capture_failures, 1u);
  EXPECT_NE(st.last_reason.find("recording its 3 ops: instantiate failed"), std::string::npos) << st.last_reason;
  push_chain(q, out, sync);  // the next step learns again
  EXPECT_EQ(q.end_step(), StepVerdict::Eager);
  q.wait_all();
  EXPECT_EQ(q.step_graph_stats().invalidations, 1u);
}

TEST(QueueStep, AFailedReplayRunsTheHeldOpsEagerlyAndSaysWhy) {
  RecordingSync sync;
  Queue q("fake:0", &sync);
  q.set_step_graph(1);
  std::vector<int> out(3, 0);
  std::vector<int> ran;
  for (int b = 0; b < 3; ++b) push_step(q, 3, ran, nullptr, &sync, true), q.end_step();  // learned, captured
  q.wait_all();
  sync.fail_replay = true;
  ran.clear();
  push_step(q, 3, ran, nullptr, &sync, true);
  EXPECT_EQ(q.end_step(), StepVerdict::Replay);
  EXPECT_NO_THROW(q.wait_all());
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2}));
  const StepGraphStats st = q.step_graph_stats();
  EXPECT_EQ(st.capture_failures, 1u);
  EXPECT_NE(st.last_reason.find("replaying its 3 ops: graph launch failed"), std::string::npos) << st.last_reason;
}

// A device fault found after a step ran as one graph names that step (the
// loop's batch) and its ops: without a check between them, any may have faulted.
TEST(QueueStep, AFaultFoundAfterAStepGraphNamesTheStep) {
  RecordingSync sync;
  Queue q("fake:0", &sync);
  q.set_step_graph(1);
  std::vector<int> ran;
  for (int b = 0; b < 4; ++b) push_step(q, 3, ran, nullptr, &sync, true), q.end_step();  // eager, eager, captured, replayed
  q.wait_all();
  ASSERT_EQ(sync.replays, 1);
  sync.fault_after_op = true;
  q.push("exposer", [] {});
  try {
    q.wait_all();
    FAIL() << "the fault was not reported";
  } catch (const KernelError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("ran as one step graph: step 4 "), std::string::npos) << what;
    EXPECT_NE(what.find("ops #10-#12"), std::string::npos) << what;
    EXPECT_EQ(e.op, "exposer");
    EXPECT_EQ(e.blame, KernelError::Blame::ExposedBy);
  }
}

// Another queue's worker waits for a held op until its step ends; a frontend
// about to block (here on back-pressure, behind that worker) releases the step
// first, so neither waits for the other.
TEST(QueueStep, AFrontendBlockedBehindAWorkerWaitingForAHeldOpReleasesTheStep) {
  Queue q0("cpu:0", nullptr), q1("cpu:1", nullptr);
  q0.set_step_graph(1);
  std::vector<int> ran;
  for (int b = 0; b < 2; ++b) push_step(q0, 2, ran), q0.end_step();
  q0.wait_all();
  const Step s = push_step(q0, 2, ran);  // armed: held until end_step()
  q1.set_max_pending(1, 0);
  std::atomic<bool> after{false};
  q1.push("reads q0's held op", [] {}, {}, {QueueDep{&q0, s.seqs.back()}});
  q1.push("behind it", [&after] { after = true; });  // the bound: waits for the first to launch
  q0.end_step();
  q1.wait_all();
  q0.wait_all();
  EXPECT_TRUE(after);
  EXPECT_NE(q0.step_graph_stats().last_reason.find("back-pressure"), std::string::npos)
      << q0.step_graph_stats().last_reason;
}

TEST(QueueStep, SynchronousModeAndBackPressureNeverHold) {
  Queue q("cpu:0", nullptr);
  q.set_step_graph(1);
  q.set_max_pending(4, 0);
  std::vector<int> ran;
  for (int b = 0; b < 4; ++b) {
    const Step s = push_step(q, 3, ran);
    EXPECT_EQ(q.end_step(), StepVerdict::Eager);
  }
  q.wait_all();
  EXPECT_EQ(ran.size(), 12u);
  EXPECT_EQ(q.step_graph_stats().captured, 0u);
}

TEST(QueueStep, OpsBetweenStepsAreNeitherHeldNorLearned) {
  Queue q("cpu:0", nullptr);
  q.set_step_graph(1);
  std::vector<int> ran;
  std::vector<StepVerdict> verdicts;
  for (int b = 0; b < 4; ++b) {
    push_step(q, 3, ran);
    verdicts.push_back(q.end_step());
    const uint64_t read = q.push("to_host", [&ran] { ran.push_back(7); });  // the batch's loss, read
    q.wait_for(read);  // a blocker between steps releases nothing
  }
  EXPECT_EQ(verdicts, (std::vector<StepVerdict>{StepVerdict::Eager, StepVerdict::Eager, StepVerdict::Capture,
                                                StepVerdict::Replay}));
  EXPECT_EQ(q.step_graph_stats().invalidations, 0u);
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 7, 0, 1, 2, 7, 0, 1, 2, 7, 0, 1, 2, 7}));
}

TEST(QueueStep, OffByDefault) {
  Queue q("cpu:0", nullptr);
  std::vector<int> ran;
  for (int b = 0; b < 4; ++b) {
    push_step(q, 3, ran);
    EXPECT_EQ(q.end_step(), StepVerdict::Eager);
  }
  q.wait_all();
  EXPECT_EQ(q.step_graph_stats().steps, 0u);
}

}  // namespace
}  // namespace amlp
