// test_async_demo.cpp — async_demo end to end (the real binary, small sizes):
// every subcommand runs, prints its measurement and its explanation, and bad
// input (an option, a number train_mlp would reject, an environment variable)
// gets one line on stderr and exit status 2. No timing is asserted.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "train/train_test_util.h"

namespace amlp::testing {
namespace {

constexpr const char* kSmall = " --device cpu --size 64 --repeats 1 --ops 200";

struct Case {
  const char* subcommand;
  std::vector<std::string> expected;  // lines of the report that must be there
};

class AsyncDemoSubcommand : public ::testing::TestWithParam<Case> {};

TEST_P(AsyncDemoSubcommand, RunsAndExplainsItsMeasurement) {
  const Case& c = GetParam();
  Ran r = run_program("async_demo", std::string(c.subcommand) + kSmall);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_NE(r.out.find("== " + std::string(c.subcommand)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("   > "), std::string::npos) << "no explanation printed:\n" << r.out;
  for (const std::string& e : c.expected) EXPECT_NE(r.out.find(e), std::string::npos) << e << "\n" << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    All, AsyncDemoSubcommand,
    ::testing::Values(Case{"queued", {"queued after", "finished after", "queue depth right after queueing"}},
                      Case{"blockers", {"s.wait_to_read()", "waitall()", "s.to_host()", "s.item()"}},
                      Case{"sync-vs-async", {"t1 frontend push", "t2 backend execution", "t3 one barrier",
                                             "barrier each op  N·(t1+t2+t3)", "one barrier      t1+N·t2+t3",
                                             "one barrier at the end is"}},
                      Case{"cpu-vs-device", {"cblas_sgemm on the calling thread", "queued/direct"}},
                      Case{"devices", {"in sequence", "in parallel", "speedup"}},
                      Case{"data-parallel", {"cpu:0 + cpu:1", "speed-up", "loss after the last step"}}),
    [](const ::testing::TestParamInfo<Case>& i) {
      std::string n = i.param.subcommand;
      for (char& ch : n)
        if (ch == '-') ch = '_';
      return n;
    });

// `all` runs each subcommand in turn: each is checked above, so here the
// smallest size that runs them all (8: data-parallel's batch of 8 rows, a
// fraction of 64's work under the sanitizers' builds).
TEST(AsyncDemo, AllRunsEverySubcommand) {
  Ran r = run_program("async_demo", "all --device cpu --size 8 --repeats 1 --ops 200");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s : {"== queued", "== blockers", "== sync-vs-async", "== cpu-vs-device", "== devices", "== data-parallel"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
}

// Its stdout a pipe whose reader is gone, or a file past `ulimit -f`, with
// SIGPIPE and SIGXFSZ at their defaults (as a shell leaves them): one line
// naming stdout and the cause, exit 1 — not a silent death by the signal.
TEST(AsyncDemo, AClosedPipeOrAFileSizeLimitOnStdoutIsOneLine) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  ::close(fds[0]);
  Spawned closed("async_demo", {"queued", "--device", "cpu", "--size", "8", "--repeats", "1"}, fds[1]);
  ::close(fds[1]);
  const Ran r = closed.wait();
  EXPECT_EQ(closed.signaled, 0) << "killed by signal " << closed.signaled;
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err, std::string("async_demo: cannot write to stdout: ") + std::strerror(EPIPE) + "\n");

  ScratchDir dir;
  const Ran big = run_command("ulimit -f 1; (" + program_path("async_demo") + " all" + kSmall + " > " + dir.file("out") + ")");
  EXPECT_EQ(big.code, 1) << big.err;
  EXPECT_EQ(big.err, std::string("async_demo: cannot write to stdout: ") + std::strerror(EFBIG) + "\n");
}

// sync-vs-async pauses a queue to time pushing alone; in synchronous mode a
// push would wait for an op the paused queue never runs, so the pause lifts it.
TEST(AsyncDemo, SyncVsAsyncRunsInSynchronousMode) {
  const char* was = std::getenv("ASYNCMLP_BLOCKING");
  const std::string saved = was ? was : "";
  ASSERT_EQ(::setenv("ASYNCMLP_BLOCKING", "1", 1), 0);
  Ran r = run_program("async_demo", std::string("sync-vs-async") + kSmall);
  if (was) ::setenv("ASYNCMLP_BLOCKING", saved.c_str(), 1);
  else ::unsetenv("ASYNCMLP_BLOCKING");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("synchronous mode is on"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("one barrier      t1+N·t2+t3"), std::string::npos) << r.out;
}

// The usage is built from main.cpp's list of subcommands: every one is there.
TEST(AsyncDemo, HelpListsEverySubcommandAndOption) {
  Ran r = run_program("async_demo", "--help");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  for (const char* s : {"usage: async_demo <subcommand>", "  queued ", "  blockers ", "  sync-vs-async ",
                        "  cpu-vs-device ", "  devices ", "  data-parallel ", "  all ", "--device", "--size", "--repeats", "--ops"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

TEST(AsyncDemo, BadInputIsOneLineAndExitTwo) {
  for (const char* args : {"", "bogus", "queued --bogus", "queued --repeats 0", "queued --repeats x",
                           "queued --device cpu:9", "queued --device gpu", "queued --device cuda:7"}) {
    Ran r = run_program("async_demo", args);
    EXPECT_EQ(r.code, 2) << "'" << args << "': " << r.out << r.err;
    EXPECT_EQ(r.err_lines(), 1u) << "'" << args << "':\n" << r.err;
  }
}

// The numeric options are read by framework/parse.h's parse_int, as
// train_mlp's are: decimal only, so '+5', ' 5', hex and a trailing unit are
// bad input, and the line names the option, its range and what it got.
TEST(AsyncDemo, NumbersParseAsTrainMlpsDo) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--size +5", "async_demo: --size must be an integer in [0, 16384] (got '+5')"},
      {"--size ' 5'", "async_demo: --size must be an integer in [0, 16384] (got ' 5')"},
      {"--size 0x10", "async_demo: --size must be an integer in [0, 16384] (got '0x10')"},
      {"--size 16385", "async_demo: --size must be an integer in [0, 16384] (got 16385)"},
      {"--size -1", "async_demo: --size must be an integer in [0, 16384] (got -1)"},
      {"--repeats +3", "async_demo: --repeats must be an integer in [1, 1000] (got '+3')"},
      {"--repeats 99999999999", "async_demo: --repeats must be an integer in [1, 1000] (got 99999999999)"},
      {"--ops +200", "async_demo: --ops must be an integer in [1, 1000000] (got '+200')"},
      {"--ops 1e3", "async_demo: --ops must be an integer in [1, 1000000] (got '1e3')"},
  };
  for (const auto& [args, says] : cases) {
    Ran r = run_program("async_demo", "queued --device cpu " + args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out << r.err;
    EXPECT_EQ(r.err, says + "\n") << args;
    EXPECT_EQ(r.out, "") << args;
  }
  // train_mlp words the same rejection the same way.
  Ran t = run_train_mlp("--device cpu --batches +5");
  EXPECT_EQ(t.code, 2);
  EXPECT_EQ(t.err, "train_mlp: error: --batches must be an integer in [1, 100000000] (got '+5')\n");
  // What is decimal still reads (010 is ten, as in train_mlp).
  Ran ok = run_program("async_demo", "queued --device cpu --size 064 --repeats 01 --ops 200");
  EXPECT_EQ(ok.code, 0) << ok.err;
}

// A library switch set to a value it does not take is bad input too: one
// line naming the variable and its value, exit 2, nothing run.
TEST(AsyncDemo, ABadEnvironmentVariableIsOneLineAndExitTwo) {
  for (const char* env : {"ASYNCMLP_BLOCKING=garbage", "ASYNCMLP_POPULATOR_NORMAL=yes", "ASYNCMLP_LT=2"}) {
    const std::string name(env, std::string(env).find('='));
    const std::string value = std::string(env).substr(name.size() + 1);
    Ran r = run_command(std::string("env ") + env + " " + program_path("async_demo") + " queued" + kSmall);
    EXPECT_EQ(r.code, 2) << env << ": " << r.err;
    EXPECT_EQ(r.err, "async_demo: environment variable " + name + " must be 0 or 1 (got '" + value + "')\n") << env;
    EXPECT_EQ(r.out, "") << env;
  }
}

}  // namespace
}  // namespace amlp::testing
