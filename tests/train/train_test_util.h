// train_test_util.h — running the real train_mlp binary (or any command) from
// a test, a scratch directory that cleans up after itself, and in it a full
// "disk", a FIFO with a reader, and a look for a writer's leftover temporaries.
//
//   ScratchDir dir;                                   // /tmp/asyncmlp_test.XXXXXX
//   Ran r = run_train_mlp("--batches 0 --memory-log " + dir.file("m.csv"));
//   EXPECT_EQ(r.code, 2); EXPECT_EQ(r.err_lines(), 1); EXPECT_TRUE(dir.empty());
//
// The functions are compiled once, in train_test_util.cpp (the test-support
// library every suite links): JSON's parser and printer, std::async and
// posix_spawn are instantiated there, not in each of the thirty files that
// include this one, which is most of what a suite's file costs to compile.
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <gtest/gtest.h>
#include "framework/json.h"
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test_paths.h"

extern char** environ;

namespace amlp::testing {

class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  bool empty() const;
  std::string write(const std::string& name, const std::string& text) const;

 private:
  std::string path_;
};

std::string read_file(const std::string& path);

// Whether the text of the repository's page `doc` ("docs/cli.md") between the
// line `open` (its newline included) and `close` is `want`, which `source`
// (the code that declares it) generates; else what the page lacks, or the
// text to paste between the markers.
::testing::AssertionResult page_section_is(const std::string& doc, const std::string& open, const std::string& close,
                                           const std::string& want, const std::string& source);

// The whole file as JSON; throws amlp::Json::parse_error when it is not.
amlp::Json read_json(const std::string& path);
// `text` as JSON (throws amlp::Json::parse_error), and a value's compact text.
amlp::Json parse_json(const std::string& text);
std::string json_text(const amlp::Json& j);

std::vector<std::string> split_lines(const std::string& text);

// A private character device MAJOR:MINOR at DIR/NAME, or, where this process
// may not make device nodes (not root) and the machine's own node is that
// device, `fallback` (/dev/full, /dev/null): unprivileged, a broken writer
// could not replace it, so it is safe to aim at. "" and the reason in *why
// when neither can be written to.
std::string make_char_device(const ScratchDir& dir, const std::string& name, unsigned major, unsigned minor,
                             const std::string& fallback, std::string* why);

// A device every write to which fails with ENOSPC (what /dev/full is, 1:7):
// a private node DIR/full when running as root, else /dev/full itself.
std::string make_full_device(const ScratchDir& dir, std::string* why);

// Still the character device 1:7 (not replaced by a file).
bool is_full_device(const std::string& path);

// The writer's temporaries for `path` (PATH.tmp*) still in its directory.
std::vector<std::string> temporaries_of(const std::string& path);

// DIR/NAME made a FIFO.
std::string make_fifo(const ScratchDir& dir, const std::string& name);

// Reads a FIFO to its end on another thread, as a consumer (a pipe into a
// script) would. It also holds a write end of its own until text() is asked
// for, after the writer under test is done: so the writer never waits for a
// reader, and a writer that never opened the FIFO (or replaced it by a file)
// makes text() return what arrived, "", instead of waiting for ever.
class FifoReader {
 public:
  explicit FifoReader(const std::string& path);
  ~FifoReader();
  FifoReader(const FifoReader&) = delete;
  FifoReader& operator=(const FifoReader&) = delete;

  // Everything read, once the writer under test has closed its end.
  std::string text();

 private:
  int read_, hold_;
  std::future<std::string> text_;
};

struct Ran {
  int code = -1;  // exit status, -1 if it did not exit normally
  std::string out, err;
  size_t err_lines() const { return split_lines(err).size(); }
};

// Runs a shell command line (/bin/sh -c), capturing both streams. The shell
// and what it starts get the signals a shell gives: none blocked, every one
// at its default disposition, whatever this test process ignores or catches.
Ran run_command(const std::string& command);

// Runs bin_dir()/<program> with `args` (shell words), capturing both streams.
Ran run_program(const std::string& program, const std::string& args);

Ran run_train_mlp(const std::string& args);

// Bad input to train_mlp: each (args, says) exits 2 with one line on stderr
// that contains `says`, and prints nothing on stdout (nothing ran).
void expect_bad_input(const std::vector<std::pair<std::string, std::string>>& cases);

// Runs a shell command line ending in train_mlp's arguments (after an
// environment, say), adding --summary-json; the first run's object.
amlp::Json summary_of(const std::string& command);

// The Python that sees Debian's packages (matplotlib), for the tools/ scripts.
std::string host_python();

// A program started in the background (posix_spawn, no shell), stdout and
// stderr to files, so a test can signal it while it runs. It starts with the
// signals a shell gives (as run_command's programs).
// `stdout_fd`: kStdoutToFile (the default: a file, read back by wait()),
// kStdoutClosed (the child starts with fd 1 closed), or a descriptor of this
// process that becomes the child's fd 1 (a pipe's write end).
//
//   Spawned p("train_mlp", {"--batches", "100000", ...});
//   wait_for_lines(log, 4);  p.signal(SIGINT);  Ran r = p.wait();
constexpr int kStdoutToFile = -2, kStdoutClosed = -1;
class Spawned {
 public:
  Spawned(const std::string& program, const std::vector<std::string>& args, int stdout_fd = kStdoutToFile);
  ~Spawned();
  Spawned(const Spawned&) = delete;
  Spawned& operator=(const Spawned&) = delete;

  bool running() const { return pid_ > 0; }
  // Not yet exited (looked at without reaping it: wait() still works).
  bool alive() const;
  void signal(int sig);
  std::string err_so_far() const;
  // Waits for it to exit; past `limit` (a safety net, not a timing check) it
  // is killed and the test fails. code: the exit status, or -1 when it was
  // killed by a signal (then `signaled` says which).
  Ran wait(std::chrono::seconds limit = std::chrono::seconds(300));
  int signaled = 0;

 private:
  ScratchDir io_;
  pid_t pid_ = -1;
};

// Waits until `path` holds at least `n` complete lines, or `ready` says the
// wait is pointless (the process ended); a safety limit, not a timing check.
bool wait_for_lines(const std::string& path, size_t n, const std::function<bool()>& gone,
                    std::chrono::seconds limit = std::chrono::seconds(120));

// A memory log read back strictly: the header, then rows each ending in a
// newline with as many fields as the header, numbered 1, 2, 3, ...
struct CsvRows {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string problem;  // "" when the file is whole
  std::string field(size_t row, const std::string& column) const {
    for (size_t c = 0; c < header.size(); ++c)
      if (header[c] == column) return rows.at(row).at(c);
    return "<no column " + column + ">";
  }
};

std::vector<std::string> csv_fields(const std::string& line);

CsvRows read_csv_strict(const std::string& path);

}  // namespace amlp::testing
