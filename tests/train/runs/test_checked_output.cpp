// Covers train/runs/checked_output.cpp, train/runs/experiment.cpp and train/driver.cpp (a stdout that fails a write fails the run), train/train_mlp.cpp (--help).
// test_checked_output.cpp — train_mlp's stdout with every write checked: the
// buffer itself (a closed pipe, a full device), then the real binary with
// stdout a pipe closed after the first line (`| head -1`), a file past
// `ulimit -f` and a closed descriptor (`>&-`): each a failed run, exit 1,
// one line on stderr naming stdout, never a silent SIGPIPE death or exit 0;
// the summary and the trace say "failed" with that line.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <ostream>

#include "train/runs/checked_output.h"
#include "train/train_test_util.h"

namespace amlp::train {
namespace {

using amlp::testing::kStdoutClosed;
using amlp::testing::Ran;
using amlp::testing::read_json;
using amlp::testing::ScratchDir;
using amlp::testing::Spawned;

std::string quick_config() { return amlp::testing::source_file("configs/quick.ini"); }

// A pipe whose reader is gone: the first write that reaches it fails with
// EPIPE (SIGPIPE ignored, as train_mlp does), the stream turns bad, the
// reason is kept and nothing more is written.
TEST(CheckedFdBuf, ClosedPipeIsAnErrorThatStops) {
  ::signal(SIGPIPE, SIG_IGN);
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  ::close(fds[0]);
  CheckedFdBuf buf(fds[1], "stdout");
  std::ostream out(&buf);
  EXPECT_EQ(output_problem(out), "");
  out << "a line" << std::endl;
  EXPECT_TRUE(out.bad());
  EXPECT_EQ(buf.error(), EPIPE);
  EXPECT_EQ(output_problem(out), "cannot write to stdout: Broken pipe");
  ::close(fds[1]);
}

TEST(CheckedFdBuf, FullDeviceAndWritesThatGoThrough) {
  ScratchDir dir;
  std::string why;
  const std::string full = amlp::testing::make_full_device(dir, &why);
  if (!full.empty()) {
    const int fd = ::open(full.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    CheckedFdBuf buf(fd, "stdout");
    std::ostream out(&buf);
    out << std::string(10000, 'x') << std::endl;  // past the buffer: written at once
    EXPECT_EQ(output_problem(out), "cannot write to stdout: No space left on device");
    ::close(fd);
  }
  // A file takes every byte, in order, through the buffer and past it.
  const std::string path = dir.file("f");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  {
    CheckedFdBuf buf(fd, "stdout");
    std::ostream out(&buf);
    const std::string big(10000, 'y');
    out << "start\n" << big << '\n' << "end" << std::endl;
    EXPECT_EQ(output_problem(out), "");
    EXPECT_EQ(amlp::testing::read_file(path), "start\n" + big + "\nend\n");
  }
  ::close(fd);
  // A stream with no buffer (another rank's silent output) is never a failure.
  std::ostream silent(nullptr);
  silent << "nothing";
  EXPECT_EQ(output_problem(silent), "");
}

void expect_failed_with(const amlp::Json& summary, const amlp::Json& trace, const std::string& says) {
  ASSERT_GE(summary.size(), 1u);
  EXPECT_EQ(summary.back().at("status"), "failed");
  EXPECT_NE(summary.back().at("error").get<std::string>().find(says), std::string::npos) << summary.back().at("error");
  EXPECT_EQ(trace.at("otherData").at("status"), "failed");
  EXPECT_NE(trace.at("otherData").at("error").get<std::string>().find(says), std::string::npos);
}

// `train_mlp ... | head -1`: the reader leaves after the first line. The
// next line printed fails with EPIPE: the loop queues no more, the queued
// batches finish, the summary and trace say failed, exit 1.
TEST(CheckedStdout, ClosedPipeFailsTheRunWithOneLine) {
  ScratchDir dir;
  const std::string summary = dir.file("s.json"), trace = dir.file("t.json");
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  Spawned p("train_mlp",
            {"--config", quick_config(), "--device", "cpu", "--quiet", "--batches", "200", "--host-work", "20ms",
             "--summary-json", summary, "--trace", trace},
            fds[1]);
  ::close(fds[1]);
  ASSERT_TRUE(p.running());
  std::string first;
  for (char c; ::read(fds[0], &c, 1) == 1 && c != '\n';) first += c;
  ::close(fds[0]);  // as head -1 does
  EXPECT_EQ(first.rfind("model: ", 0), 0u) << first;
  const Ran r = p.wait();
  EXPECT_EQ(p.signaled, 0) << "killed by signal " << p.signaled << " (SIGPIPE is 13)";
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_NE(r.err.find("train_mlp: error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cannot write to stdout: Broken pipe"), std::string::npos) << r.err;
  ASSERT_TRUE(std::filesystem::exists(summary) && std::filesystem::exists(trace)) << r.err;
  expect_failed_with(read_json(summary), read_json(trace), "cannot write to stdout: Broken pipe");
  EXPECT_GE(read_json(summary).back().at("batches_done").get<int>(), 1);
}

// `trap '' XFSZ; ulimit -f 1`: stdout, a file, takes 1024 bytes; the next
// write fails with EFBIG. Exit 1 and one line, not 0 with the output cut.
TEST(CheckedStdout, FileSizeLimitFailsTheRun) {
  const Ran r = amlp::testing::run_command("bash -c \"trap '' XFSZ; ulimit -f 1; exec " +
                                           amlp::testing::program_path("train_mlp") + " --config " + quick_config() +
                                           " --device cpu --quiet --batch-size 64 --batches 5 --compare\"");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_NE(r.err.find("cannot write to stdout: File too large"), std::string::npos) << r.err;
  EXPECT_LE(r.out.size(), 1024u);
}

// `>&-`: stdout closed from the start. Nothing runs (the first line already
// fails); exit 1 with one line; no file the run opens takes fd 1 (the
// memory log would get the book's lines); --help fails alike.
TEST(CheckedStdout, ClosedStdoutFailsAtOnce) {
  ScratchDir dir;
  const std::string log = dir.file("m.csv"), trace = dir.file("t.json");
  Spawned p("train_mlp",
            {"--device", "cpu", "--batches", "5", "--batch-size", "64", "--features", "32", "--hidden", "32",
             "--memory-log", log, "--trace", trace},
            kStdoutClosed);
  const Ran r = p.wait();
  EXPECT_EQ(p.signaled, 0);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_NE(r.err.find("train_mlp: error: cannot write to stdout: Bad file descriptor"), std::string::npos) << r.err;
  if (std::filesystem::exists(log))
    EXPECT_EQ(amlp::testing::read_file(log).rfind("batch,", 0), 0u) << "stdout's lines went into the memory log";
  ASSERT_TRUE(std::filesystem::exists(trace));
  EXPECT_EQ(read_json(trace).at("otherData").at("status"), "failed");

  Spawned help("train_mlp", {"--help"}, kStdoutClosed);
  const Ran h = help.wait();
  EXPECT_EQ(h.code, 1) << h.err;
  EXPECT_EQ(h.err_lines(), 1u) << h.err;
  EXPECT_NE(h.err.find("cannot write to stdout"), std::string::npos) << h.err;
}

// stdout failing before the first run (`>&-`, `>/dev/full`): the summary
// holds the run that did not start, marked failed with the one line, not an
// empty list (one object per planned run, also under --compare).
TEST(CheckedStdout, AStdoutThatFailsBeforeTheFirstRunMarksItFailedInTheSummary) {
  ScratchDir dir;
  const std::string summary = dir.file("s.json");
  const std::vector<std::string> args = {"--device", "cpu", "--quiet", "--batches", "2", "--batch-size", "8",
                                         "--features", "4", "--hidden", "4", "--summary-json", summary};
  Spawned closed("train_mlp", args, kStdoutClosed);
  Ran r = closed.wait();
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  amlp::Json s = read_json(summary);
  ASSERT_EQ(s.size(), 1u) << s;
  EXPECT_EQ(s[0].at("status"), "failed");
  EXPECT_EQ("train_mlp: error: " + s[0].at("error").get<std::string>() + "\n", r.err);

  std::string why;
  const std::string full = amlp::testing::make_full_device(dir, &why);
  if (full.empty()) GTEST_SKIP() << why;
  r = amlp::testing::run_command("sh -c '" + amlp::testing::program_path("train_mlp") +
                                 " --device cpu --quiet --batches 2 --batch-size 8 --features 4 --hidden 4 --compare "
                                 "--summary-json " + summary + " >" + full + "'");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("cannot write to stdout"), std::string::npos) << r.err;
  s = read_json(summary);
  ASSERT_GE(s.size(), 3u) << s;
  for (const amlp::Json& run : s) {
    EXPECT_EQ(run.at("status"), "failed");
    EXPECT_EQ("train_mlp: error: " + run.at("error").get<std::string>() + "\n", r.err);
  }
}

}  // namespace
}  // namespace amlp::train
