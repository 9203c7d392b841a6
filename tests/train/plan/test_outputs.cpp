// Covers train/plan/outputs.cpp (outputs_problem, through the real train_mlp), framework/util/write_file.cpp (output_problem, file_identity).
// The files a run will write are checked before anything runs: each
// is opened as it will be opened, so a link to nothing, a loop of links, a
// name too long for a directory entry and a folder that takes no new files are
// refused up front, naming the option; no two outputs, and no output and the
// config file, may be one file, however the paths are spelled. Each refusal is
// one line on stderr, exit status 2, nothing run and nothing left created.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "framework/parse.h"
#include "train/options/file_options.h"
#include "train/options/options.h"
#include "train/plan/outputs.h"
#include "train/train_test_util.h"

namespace amlp::train {
namespace {

using amlp::testing::program_path;
using amlp::testing::Ran;
using amlp::testing::read_file;
using amlp::testing::run_command;
using amlp::testing::ScratchDir;

const std::string kSmallRun = "--device cpu --quiet --batches 2 --batch-size 8 --hidden 4 ";

// `s` as one shell word.
std::string sh_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// train_mlp with `args` (shell words), run in `dir`, bounded by `timeout 60`
// so that a regression that waits for ever fails instead of hanging.
Ran run_in(const ScratchDir& dir, const std::string& args) {
  return run_command("cd " + sh_quoted(dir.path()) + " && timeout -k 5 60 " + program_path("train_mlp") + " " + kSmallRun +
                     args);
}

// Refused up front: status 2, one line that contains `says`, nothing ran.
void expect_refused(const Ran& r, const std::string& says) {
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("train_mlp: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << "wanted: " << says << "\ngot: " << r.err;
  EXPECT_EQ(r.out, "") << "nothing ran";
}

std::vector<std::string> names_in(const ScratchDir& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

// A check that asked only whether the path is writable would pass each of
// these, and the run go to its end and then fail writing the trace or
// summary (exit 1), or, for the memory log, fail before its first batch.
TEST(Outputs, WhatWouldFailToOpenIsRefusedUpFrontNamingItsOption) {
  ScratchDir dir;
  ASSERT_EQ(::symlink("/nonexistent/x.json", dir.file("dangling").c_str()), 0);
  ASSERT_EQ(::symlink("loop_b", dir.file("loop_a").c_str()), 0);
  ASSERT_EQ(::symlink("loop_a", dir.file("loop_b").c_str()), 0);
  const std::string long_name(300, 'n');
  const std::vector<std::string> before = names_in(dir);
  const std::pair<std::string, std::string> cases[] = {
      {"--summary-json dangling",
       "--summary-json: cannot write 'dangling': it is a symbolic link to '/nonexistent/x.json', which does not exist"},
      {"--trace dangling", "--trace: cannot write 'dangling': it is a symbolic link"},
      {"--memory-log dangling", "--memory-log: cannot write 'dangling': it is a symbolic link"},
      {"--trace loop_a", "--trace: cannot write 'loop_a': Too many levels of symbolic links"},
      {"--memory-log loop_a", "--memory-log: cannot write 'loop_a': Too many levels of symbolic links"},
      {"--summary-json " + long_name, "--summary-json: cannot write '" + shown_path(long_name) + "': File name too long"},
      {"--memory-log " + long_name, "--memory-log: cannot write"},
      {"--compare --memory-log " + std::string(250, 'm') + ".csv", "--memory-log: cannot write"},  // the tagged names
      {"--summary-json /proc/x.json", "--summary-json: cannot write '/proc/x.json': cannot create a file in '/proc'"},
      {"--trace /sys/x.json", "--trace: cannot write '/sys/x.json': cannot create a file in '/sys'"},
      {"--memory-log /proc/x.csv", "--memory-log: cannot write '/proc/x.csv': cannot create a file in '/proc'"}};
  for (const auto& [args, says] : cases) {
    SCOPED_TRACE(args);
    expect_refused(run_in(dir, args), says);
  }
  EXPECT_EQ(names_in(dir), before) << "nothing created";
}

// Two outputs on one file would lose one of them, and an output on the config
// file would destroy it: each is refused before the run.
TEST(Outputs, NoTwoOutputsAndNoOutputAndTheConfigAreOneFile) {
  ScratchDir dir;
  dir.write("x.ini", "batches = 2\n");
  ASSERT_EQ(::mkdir(dir.file("sub").c_str(), 0700), 0);
  ASSERT_EQ(::symlink("x.ini", dir.file("link.ini").c_str()), 0);
  dir.write("old.json", "[]\n");
  ASSERT_EQ(::symlink("old.json", dir.file("link.json").c_str()), 0);
  const std::vector<std::string> before = names_in(dir);
  const std::pair<std::string, std::string> cases[] = {
      {"--memory-log same --summary-json same",
       "--memory-log and --summary-json name one file, 'same': each would overwrite the other"},
      {"--trace x.json --summary-json ./x.json", "--trace and --summary-json name one file, './x.json' (as 'x.json')"},
      {"--trace x.json --memory-log sub/../x.json",
       "--memory-log and --trace name one file, 'x.json' (as 'sub/../x.json')"},
      {"--summary-json old.json --trace link.json", "--trace and --summary-json name one file, 'old.json' (as 'link.json')"},
      {"--memory-log " + dir.file("m.csv") + " --trace m.csv", "--memory-log and --trace name one file"},
      {"--config x.ini --summary-json x.ini", "--summary-json would overwrite the config file 'x.ini'"},
      {"--config x.ini --memory-log ./x.ini", "--memory-log would overwrite the config file './x.ini' (--config 'x.ini')"},
      {"--config link.ini --trace x.ini", "--trace would overwrite the config file 'x.ini'"},
      {"--compare --memory-log mem.csv --summary-json mem.none.csv", "--memory-log and --summary-json name one file, 'mem.none.csv'"},
      {"--config x.ini --save x.ini", "--save would overwrite the config file 'x.ini'"},
      {"--load m.safetensors --trace ./m.safetensors",
       "--trace would overwrite the parameters file './m.safetensors' (--load 'm.safetensors')"},
      // Two sweep fractions that print alike (%g) would share their runs' logs.
      {"--sweep --sweep-fractions 0.1,0.1000001 --memory-log mem.csv", "--memory-log: two runs would write one file, 'mem.h0.1d.batch.csv'"}};
  for (const auto& [args, says] : cases) {
    SCOPED_TRACE(args);
    expect_refused(run_in(dir, args), says);
  }
  EXPECT_EQ(names_in(dir), before) << "nothing created";
  EXPECT_EQ(read_file(dir.file("x.ini")), "batches = 2\n");
  // --save may replace the --load file: read before the run, written after it.
  const Ran saved = run_in(dir, "--save p.safetensors");
  ASSERT_EQ(saved.code, 0) << saved.err;
  const Ran carried_on = run_in(dir, "--load p.safetensors --save p.safetensors");
  EXPECT_EQ(carried_on.code, 0) << carried_on.err;
  // A device or a FIFO is written in place, never replaced: outputs may share one.
  const Ran shared = run_in(dir, "--trace /dev/null --summary-json /dev/null --memory-log /dev/null");
  EXPECT_EQ(shared.code, 0) << shared.err;
}

// A path in a message is one short line: a newline in it escaped, 5000
// characters cut to its two ends (never a message broken into lines, or one
// that echoes the whole path: 10 KB).
TEST(Outputs, APathInAMessageIsOneShortLine) {
  ScratchDir dir;
  const std::string path = "/nonexistent/a\nb/" + std::string(5000, 'x') + ".json";
  const Ran r = run_in(dir, "--summary-json " + sh_quoted(path));
  expect_refused(r, "--summary-json: cannot write '" + shown_path(path) + "'");
  EXPECT_LT(r.err.size(), 400u) << r.err;
  const std::string config = "/nonexistent/c\nd/" + std::string(5000, 'c') + ".ini";
  const Ran c = run_in(dir, "--config " + sh_quoted(config));
  expect_refused(c, "cannot read config file '" + shown_path(config) + "'");
  EXPECT_LT(c.err.size(), 400u) << c.err;
}

// What a failed run (here one that diverged) does to each output that was
// there before, one case per output of the table of files: --save writes
// nothing (the file keeps its bytes); the memory log, the summary and the
// trace are the run's record, each replaced whole by the failed run's own
// (rows, "status": "failed"), never half-written and never "completed". An
// output option added to the table without a case here fails the test.
TEST(Outputs, AFailedRunLeavesEachOutputAsTheTableSays) {
  for (const FileOption& f : file_options()) {
    if (f.role != FileRole::Output) continue;
    SCOPED_TRACE(f.option);
    ScratchDir dir;
    const std::string old = "what was there\n";
    const std::string path = dir.write("out", old);
    const Ran r = run_in(dir, "--lr 1e30 --" + std::string(f.option) + " out");
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_EQ(r.err_lines(), 1u) << r.err;
    EXPECT_NE(r.err.find("diverged"), std::string::npos) << r.err;
    EXPECT_EQ(names_in(dir), std::vector<std::string>{"out"}) << "no temporary left";
    const std::string now = read_file(path);
    const std::string option = f.option;
    if (option == "save") {
      EXPECT_EQ(now, old);
    } else if (option == "memory-log") {
      EXPECT_EQ(now.rfind("batch,", 0), 0u) << now;
      EXPECT_EQ(now.back(), '\n') << "whole rows";
    } else if (option == "summary-json") {
      EXPECT_EQ(amlp::testing::parse_json(now)[0].at("status"), "failed");
    } else if (option == "trace") {
      EXPECT_EQ(amlp::testing::parse_json(now).at("otherData").at("status"), "failed");
    } else {
      ADD_FAILURE() << "--" << option << ": an output with no case here";
    }
  }
}

}  // namespace
}  // namespace amlp::train
