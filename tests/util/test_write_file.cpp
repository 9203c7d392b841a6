// Covers framework/util/write_file.cpp, framework/util/trace.cpp, train/report/summary_json.cpp, train/runs/memory_log.cpp.
// the writers of output files (framework/write_file.h)
// and the two JSON files written through it, parsed back with framework/json.h:
// a regular file is replaced whole with no temporary left, a FIFO or a device is
// written in place and stays what it was, a FIFO with no reader is an error at
// once, never a wait, and every failure (a directory that is gone, a full
// disk, a reader that went away) is one error naming the file on one line; a
// file of records (the memory log) never ends in half a record; the check
// before a run finds what would fail as the file will be opened, and tells
// two spellings of one file apart from two files.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include "framework/json.h"
#include <string>
#include <thread>
#include <vector>

#include "framework/error.h"
#include "framework/parse.h"
#include "framework/trace.h"
#include "framework/write_file.h"
#include "train/runs/memory_log.h"
#include "train/report/summary_json.h"
#include "train/train_test_util.h"

namespace amlp {
namespace {

using testing::is_full_device;
using testing::make_full_device;
using testing::read_file;
using testing::parse_json;
using testing::read_json;
using testing::FifoReader;
using testing::make_fifo;
using testing::ScratchDir;
using testing::temporaries_of;
using testing::make_char_device;

// The message of the amlp::Error that f throws; "" when it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string expected_error(const std::string& path, int err) {
  return "cannot write '" + path + "': " + std::strerror(err);
}

// Runs `f` in a child process and returns the message of the amlp::Error it
// throws ("" for none). A child still running after `limit` (a write that
// waits for a FIFO's reader for ever) is killed and the result says so, so
// such a regression fails the test instead of hanging it.
std::string error_within(std::chrono::seconds limit, const std::function<void()>& f) {
  int fds[2];
  if (::pipe(fds) != 0) return "<pipe: " + std::string(std::strerror(errno)) + ">";
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string msg;
    try {
      f();
    } catch (const Error& e) {
      msg = e.what();
    } catch (...) {
      msg = "<not an amlp::Error>";
    }
    if (::write(fds[1], msg.data(), msg.size()) < 0) ::_exit(1);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string got;
  const auto until = std::chrono::steady_clock::now() + limit;
  bool hung = false;
  for (char buf[4096];;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    pollfd p{fds[0], POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) == 0) {
      hung = true;
      break;
    }
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (hung) ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return hung ? "<still running after " + std::to_string(limit.count()) + " s: killed>" : got;
}

mode_t file_type(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? (st.st_mode & S_IFMT) : 0;
}

// --- the writer --------------------------------------------------------------------------

TEST(WriteFile, NewAndExistingRegularFilesAreReplacedWholeWithNoTmpLeft) {
  ScratchDir dir;
  const std::string path = dir.file("out.json");
  write_file(path, "first\n");
  EXPECT_EQ(read_file(path), "first\n");
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  struct stat before {};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);

  write_file(path, "second, longer\n");
  EXPECT_EQ(read_file(path), "second, longer\n");
  struct stat after {};
  ASSERT_EQ(::stat(path.c_str(), &after), 0);
  EXPECT_TRUE(S_ISREG(after.st_mode));
  EXPECT_NE(after.st_ino, before.st_ino) << "renamed over, not rewritten in place";
  EXPECT_EQ(after.st_mode & 07777, 0640u) << "the file's permissions stay";
  EXPECT_TRUE(temporaries_of(path).empty());

  write_file(path, "");  // an empty file is a file too
  EXPECT_EQ(read_file(path), "");
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) names.push_back(e.path().filename());
  EXPECT_EQ(names, std::vector<std::string>{"out.json"});
}

// Two runs writing the same file at once: each temporary is its own, so a
// reader only ever sees one writer's whole text, never a mix or half of one,
// and neither writer fails.
TEST(WriteFile, WritersAtOnceEachReplaceTheFileWhole) {
  ScratchDir dir;
  const std::string path = dir.file("out.json");
  std::vector<std::string> texts;
  for (char c = 'a'; c < 'a' + 4; ++c) texts.push_back(std::string(256 << 10, c) + "\n");
  write_file(path, texts[0]);
  std::atomic<bool> done{false};
  std::atomic<int> torn{0}, failed{0};
  std::thread reader([&] {
    while (!done) {
      const std::string got = read_file(path);
      if (std::find(texts.begin(), texts.end(), got) == texts.end()) ++torn;
    }
  });
  std::vector<std::thread> writers;
  for (const std::string& text : texts)
    writers.emplace_back([&, text] {
      for (int i = 0; i < 25; ++i) {
        if (!error_of([&] { write_file(path, text); }).empty()) ++failed;
      }
    });
  for (std::thread& w : writers) w.join();
  done = true;
  reader.join();
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(torn, 0) << "a reader saw a file that was not one writer's whole text";
  EXPECT_NE(std::find(texts.begin(), texts.end(), read_file(path)), texts.end());
  EXPECT_TRUE(temporaries_of(path).empty());
}

// A stale temporary left by a run that was killed is none of ours: it is
// neither renamed into place nor in the way.
TEST(WriteFile, AStaleTemporaryIsNotRenamedIntoPlace) {
  ScratchDir dir;
  const std::string path = dir.file("out.json");
  dir.write("out.json.tmp", "half a file from a run that was killed");
  write_file(path, "whole\n");
  EXPECT_EQ(read_file(path), "whole\n");
  EXPECT_EQ(temporaries_of(path), std::vector<std::string>{dir.file("out.json.tmp")});
}

TEST(WriteFile, ALinkStaysALinkAndTheFileItNamesIsReplaced) {
  ScratchDir dir;
  const std::string target = dir.write("target.json", "old\n");
  const std::string link = dir.file("link.json");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  write_file(link, "new\n");
  EXPECT_EQ(file_type(link), static_cast<mode_t>(S_IFLNK));
  EXPECT_EQ(read_file(target), "new\n");
  EXPECT_TRUE(temporaries_of(link).empty());
  EXPECT_TRUE(temporaries_of(target).empty());
}

TEST(WriteFile, AVanishedDirectoryIsOneErrorNamingTheFile) {
  ScratchDir dir;
  const std::string sub = dir.file("sub");
  ASSERT_EQ(::mkdir(sub.c_str(), 0700), 0);
  ASSERT_EQ(::rmdir(sub.c_str()), 0);  // checked up front, gone by the time the run ends
  const std::string path = sub + "/out.json";
  EXPECT_EQ(error_of([&] { write_file(path, "{}\n"); }), expected_error(path, ENOENT));
  EXPECT_TRUE(dir.empty());
}

TEST(WriteFile, ADirectoryIsOneErrorNamingIt) {
  ScratchDir dir;
  EXPECT_EQ(error_of([&] { write_file(dir.path(), "{}\n"); }), expected_error(dir.path(), EISDIR));
  EXPECT_TRUE(dir.empty());
}

// A write that fails half way (here: past the file size limit, EFBIG) leaves
// the old file as it was and no temporary.
// This process's file size limit lowered to `bytes`, with SIGXFSZ ignored (a
// write past it then fails with EFBIG rather than ending the process), until
// the end of its scope. ok(): whether both took effect.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    if (::getrlimit(RLIMIT_FSIZE, &old_limit_) != 0 || ::sigaction(SIGXFSZ, &ignore, &old_action_) != 0) return;
    ignoring_ = true;
    struct rlimit small = old_limit_;
    small.rlim_cur = bytes;
    limited_ = ::setrlimit(RLIMIT_FSIZE, &small) == 0;
  }
  ~FileSizeLimit() {
    if (limited_) ::setrlimit(RLIMIT_FSIZE, &old_limit_);
    if (ignoring_) ::sigaction(SIGXFSZ, &old_action_, nullptr);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;
  bool ok() const { return limited_; }

 private:
  struct rlimit old_limit_ {};
  struct sigaction old_action_ {};
  bool ignoring_ = false, limited_ = false;
};

TEST(WriteFile, AFailureHalfWayLeavesTheOldFileAndNoTmp) {
  ScratchDir dir;
  const std::string path = dir.write("out.json", "the old, complete file\n");
  std::string msg;
  {
    FileSizeLimit limit(4096);
    ASSERT_TRUE(limit.ok());
    msg = error_of([&] { write_file(path, std::string(64 << 10, 'x')); });
  }
  EXPECT_EQ(msg, expected_error(path, EFBIG));
  EXPECT_EQ(read_file(path), "the old, complete file\n");
  EXPECT_TRUE(temporaries_of(path).empty());
}

TEST(WriteFile, AFullDiskIsOneErrorNamingTheFileAndTheDeviceStays) {
  ScratchDir dir;
  std::string why;
  const std::string full = make_full_device(dir, &why);
  if (full.empty()) GTEST_SKIP() << why;
  EXPECT_EQ(error_of([&] { write_file(full, "{}\n"); }), expected_error(full, ENOSPC));
  EXPECT_TRUE(is_full_device(full)) << "the device node was replaced";
  EXPECT_TRUE(temporaries_of(full).empty());
}

// A character device that takes what it is given (/dev/null, 1:3): written
// in place, and still that device afterwards, not a file put in its stead.
TEST(WriteFile, ACharacterDeviceIsWrittenInPlaceAndStaysADevice) {
  ScratchDir dir;
  std::string why;
  const std::string null = make_char_device(dir, "null", 1, 3, "/dev/null", &why);
  if (null.empty()) GTEST_SKIP() << why;
  EXPECT_NO_THROW(write_file(null, std::string(1 << 20, 'x')));
  struct stat st {};
  ASSERT_EQ(::lstat(null.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  EXPECT_TRUE(temporaries_of(null).empty());
}

// /dev/stdout when stdout is a pipe (`train_mlp --trace /dev/stdout | jq`):
// the text goes down that pipe; /dev/stdout stays the link it is.
TEST(WriteFile, DevStdoutIntoAPipeIsWrittenThroughIt) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::fflush(stdout);
  const int saved = ::dup(1);
  ASSERT_GE(saved, 0);
  ASSERT_EQ(::dup2(fds[1], 1), 1);
  ::close(fds[1]);
  const std::string msg = error_of([] { write_file("/dev/stdout", "{\"to\": \"stdout\"}\n"); });
  std::fflush(stdout);
  ::dup2(saved, 1);  // the pipe's last write end closes: the read below ends
  ::close(saved);
  std::string got;
  char buf[256];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  EXPECT_EQ(msg, "");
  EXPECT_EQ(got, "{\"to\": \"stdout\"}\n");
  EXPECT_EQ(file_type("/dev/stdout"), static_cast<mode_t>(S_IFLNK));
}

TEST(WriteFile, AFifoIsWrittenInPlaceAndStaysAFifo) {
  ScratchDir dir;
  const std::string fifo = make_fifo(dir, "pipe");
  std::string content;
  for (int i = 0; content.size() < (1u << 20); ++i) content += "line " + std::to_string(i) + "\n";  // > a pipe's buffer
  FifoReader reader(fifo);
  write_file(fifo, content);
  EXPECT_EQ(reader.text(), content);
  EXPECT_EQ(file_type(fifo), static_cast<mode_t>(S_IFIFO));
  EXPECT_TRUE(temporaries_of(fifo).empty());
}

// A reader that goes away (`| head`) is a write error, not a SIGPIPE that
// kills the process; and no SIGPIPE is left pending afterwards.
TEST(WriteFile, AReaderThatWentAwayIsOneErrorNotAKill) {
  ScratchDir dir;
  const std::string fifo = make_fifo(dir, "pipe");
  // The reader is there when the writer opens (which never waits for one),
  // and goes away once the first bytes arrive.
  const int fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  std::thread reader([&] {
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, 20000);
    ::close(fd);
  });
  const std::string msg = error_of([&] { write_file(fifo, std::string(1 << 20, 'x')); });
  reader.join();
  EXPECT_EQ(msg, expected_error(fifo, EPIPE));
  sigset_t pending;
  sigemptyset(&pending);
  ASSERT_EQ(::sigpending(&pending), 0);
  EXPECT_FALSE(sigismember(&pending, SIGPIPE));
  EXPECT_EQ(file_type(fifo), static_cast<mode_t>(S_IFIFO));
}

// A FIFO that no process has open for reading: one error at once, naming the
// file and why, instead of waiting for ever for a reader (a blocking open(2) would hang the
// run after its last batch); the FIFO stays a FIFO.
TEST(WriteFile, AFifoWithNoReaderIsOneErrorAtOnceNotAHang) {
  ScratchDir dir;
  const std::string fifo = make_fifo(dir, "pipe");
  const std::string msg = error_within(std::chrono::seconds(20), [&] { write_file(fifo, "{}\n"); });
  EXPECT_EQ(msg, "cannot write '" + fifo + "': no process has the FIFO open for reading (start its reader first)");
  EXPECT_EQ(file_type(fifo), static_cast<mode_t>(S_IFIFO));
  EXPECT_TRUE(temporaries_of(fifo).empty());
}

// A name near the limit of a directory entry (255 bytes) still gets its
// temporary beside it: the temporary's name (the file's + ".tmp.<pid>.<n>",
// too long as it stands) is cut to fit.
TEST(WriteFile, ANameOfTheLongestLengthIsWritten) {
  ScratchDir dir;
  const std::string path = dir.file(std::string(255 - 5, 'n') + ".json");
  EXPECT_EQ(error_of([&] { write_file(path, "{}\n"); }), "");
  EXPECT_EQ(read_file(path), "{}\n");
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) names.push_back(e.path().filename());
  EXPECT_EQ(names.size(), 1u) << "no temporary left";
}

// A message names the file on one line: control characters escaped, a long
// path cut to its two ends (framework/parse.h shown_path).
TEST(WriteFile, AnErrorIsOneShortLineWhateverThePath) {
  const std::string path = "/nonexistent/a\nb/" + std::string(5000, 'x') + ".json";
  const std::string msg = error_of([&] { write_file(path, "{}\n"); });
  EXPECT_EQ(msg, "cannot write '" + shown_path(path) + "': " + std::strerror(ENAMETOOLONG));
  EXPECT_EQ(msg.find('\n'), std::string::npos);
  EXPECT_LT(msg.size(), 300u);
}

// --- a file of records: the memory log's rows ---------------------------------------------

// A write that stops short (past the file size limit: the kernel takes part of
// the record, then refuses with EFBIG) cuts the file back to its last whole
// record: it never ends in half a row.
TEST(RecordFile, AWriteThatStopsShortLeavesOnlyWholeRecords) {
  ScratchDir dir;
  const std::string path = dir.file("m.csv");
  const std::string record = std::string(95, 'r') + "\n";  // 41 fit in 4000 bytes; the 42nd is cut
  std::string msg;
  size_t appended = 0;
  {
    FileSizeLimit limit(4000);
    ASSERT_TRUE(limit.ok());
    msg = error_of([&] {
      RecordFile f(path, "memory log");
      for (; appended < 100; ++appended) f.append(record);
    });
  }
  EXPECT_EQ(msg, "cannot write memory log '" + path + "': " + std::strerror(EFBIG));
  EXPECT_EQ(appended, 41u);
  std::string whole;
  for (size_t i = 0; i < appended; ++i) whole += record;
  EXPECT_EQ(read_file(path), whole) << "every record before the failure, and nothing of the one that failed";
}

TEST(RecordFile, AFifoWithNoReaderIsOneErrorAtOnceNotAHang) {
  ScratchDir dir;
  const std::string fifo = make_fifo(dir, "pipe");
  const std::string msg = error_within(std::chrono::seconds(20), [&] { train::MemoryLog log(fifo); });
  EXPECT_EQ(msg, "cannot write --memory-log '" + fifo +
                     "': no process has the FIFO open for reading (start its reader first)");
  EXPECT_EQ(file_type(fifo), static_cast<mode_t>(S_IFIFO));
}

TEST(RecordFile, AFifoWithAReaderGetsEveryRecord) {
  ScratchDir dir;
  const std::string fifo = make_fifo(dir, "pipe");
  FifoReader reader(fifo);
  std::string sent;
  {
    RecordFile f(fifo, "memory log");
    for (int i = 0; i < 5000; ++i) {  // past a pipe's buffer: the writer waits for the reader, then goes on
      const std::string record = std::to_string(i) + ",row\n";
      f.append(record);
      sent += record;
    }
  }
  EXPECT_EQ(reader.text(), sent);
}

// --- the check before a run ---------------------------------------------------------------

// What the check finds before anything runs, naming why; a check that only
// asked whether the path is writable would pass each of these, and the run
// fail after its last batch (the long name: when the file was written). Root bypasses permissions, so
// the cases are ones that fail for root too.
TEST(OutputProblem, FindsWhatWouldFailAsTheFileWillBeOpened) {
  ScratchDir dir;
  const std::string dangling = dir.file("dangling"), loop_a = dir.file("loop_a"), loop_b = dir.file("loop_b");
  ASSERT_EQ(::symlink("/nonexistent/x.json", dangling.c_str()), 0);
  ASSERT_EQ(::symlink(loop_b.c_str(), loop_a.c_str()), 0);
  ASSERT_EQ(::symlink(loop_a.c_str(), loop_b.c_str()), 0);
  const std::string long_name = dir.file(std::string(300, 'n'));
  for (OutputWay way : {OutputWay::Whole, OutputWay::Records}) {
    SCOPED_TRACE(way == OutputWay::Whole ? "whole" : "records");
    EXPECT_EQ(output_problem(dangling, way),
              "it is a symbolic link to '/nonexistent/x.json', which does not exist");
    EXPECT_EQ(output_problem(loop_a, way), std::strerror(ELOOP));
    EXPECT_EQ(output_problem(long_name, way), std::strerror(ENAMETOOLONG));
    EXPECT_EQ(output_problem("/proc/x.json", way), "cannot create a file in '/proc': " + std::string(std::strerror(ENOENT)));
    EXPECT_NE(output_problem("/sys/x.json", way), "") << "sysfs takes no new files, not even root's";
    EXPECT_EQ(output_problem(dir.path(), way), "it is a directory");
    EXPECT_EQ(output_problem("/nonexistent/x.json", way), "directory '/nonexistent' does not exist");
    EXPECT_EQ(output_problem(dir.file("new.json"), way), "");
    EXPECT_EQ(output_problem("/dev/null", way), "");
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("new.json"))) << "the check leaves nothing created";
}

// A directory made immutable (chattr +i), where the file system allows it:
// while it is, nobody (root included) may create, rename or remove in it.
class ImmutableDir {
 public:
  explicit ImmutableDir(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_DIRECTORY)) {
    int flags = 0;
    if (fd_ < 0 || ::ioctl(fd_, FS_IOC_GETFLAGS, &flags) != 0) return;
    flags |= FS_IMMUTABLE_FL;
    set_ = ::ioctl(fd_, FS_IOC_SETFLAGS, &flags) == 0;
    if (!set_) why_ = std::strerror(errno);
  }
  ~ImmutableDir() {
    int flags = 0;
    if (set_ && ::ioctl(fd_, FS_IOC_GETFLAGS, &flags) == 0) {
      flags &= ~FS_IMMUTABLE_FL;
      ::ioctl(fd_, FS_IOC_SETFLAGS, &flags);
    }
    if (fd_ >= 0) ::close(fd_);
  }
  ImmutableDir(const ImmutableDir&) = delete;
  ImmutableDir& operator=(const ImmutableDir&) = delete;
  bool set() const { return set_; }
  const std::string& why() const { return why_; }

 private:
  int fd_;
  bool set_ = false;
  std::string why_ = "FS_IOC_GETFLAGS is not supported here";
};

// A file that exists in an immutable directory: written in place it could be
// (a memory log), but a whole file's temporary cannot be made beside it, so
// the check says so before the run, not the trace or summary after it (which a
// check of the file alone would let happen).
TEST(OutputProblem, AWholeFileInAnImmutableDirectoryIsFound) {
  ScratchDir dir;
  const std::string sub = dir.file("frozen");
  ASSERT_EQ(::mkdir(sub.c_str(), 0700), 0);
  const std::string old = sub + "/old.json";
  std::ofstream(old) << "[]\n";
  const ImmutableDir frozen(sub);
  if (!frozen.set()) GTEST_SKIP() << "cannot make a directory immutable here: " << frozen.why();
  EXPECT_EQ(output_problem(old, OutputWay::Whole),
            "cannot create a file in '" + sub + "': " + std::strerror(EPERM));
  EXPECT_EQ(output_problem(sub + "/new.json", OutputWay::Whole),
            "cannot create a file in '" + sub + "': " + std::strerror(EPERM));
  EXPECT_EQ(output_problem(sub + "/new.csv", OutputWay::Records),
            "cannot create a file in '" + sub + "': " + std::strerror(EPERM));
  EXPECT_EQ(output_problem(old, OutputWay::Records), "") << "written in place, it can be";
  EXPECT_NE(error_of([&] { write_file(old, "{}\n"); }), "") << "what the check foresaw";
}

// An existing file is checked without being changed: not truncated (a memory
// log), not replaced (a whole file), no temporary left.
TEST(OutputProblem, LeavesAnExistingFileAsItWas) {
  ScratchDir dir;
  const std::string path = dir.write("old.csv", "the old text\n");
  struct stat before {};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  EXPECT_EQ(output_problem(path, OutputWay::Records), "");
  EXPECT_EQ(output_problem(path, OutputWay::Whole), "");
  struct stat after {};
  ASSERT_EQ(::stat(path.c_str(), &after), 0);
  EXPECT_EQ(read_file(path), "the old text\n");
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_TRUE(temporaries_of(path).empty());
}

// The ranks of one job check the same new names at once, and each check
// creates the name and removes it: a check that sees another's file and then
// finds it gone looks again, and finds nothing wrong (a single look can fail
// with 'No such file or directory': here, within the first few thousand).
TEST(OutputProblem, ChecksAtOnceOnOneNewNameAllPass) {
  ScratchDir dir;
  const std::string path = dir.file("mem.csv");
  std::atomic<int> failed{0};
  std::string first;
  std::mutex mu;
  std::vector<std::thread> checkers;
  for (int t = 0; t < 4; ++t)
    checkers.emplace_back([&] {
      for (int i = 0; i < 3000; ++i)
        for (OutputWay way : {OutputWay::Records, OutputWay::Whole})
          if (std::string why = output_problem(path, way); !why.empty()) {
            std::lock_guard<std::mutex> lk(mu);
            if (failed++ == 0) first = why;
          }
    });
  for (std::thread& c : checkers) c.join();
  EXPECT_EQ(failed.load(), 0) << "first: " << first;
  EXPECT_FALSE(std::filesystem::exists(path)) << "a check left the name it made";
}

// A FIFO is not opened by the check: opening and closing it would wake a
// reader waiting on it and then end its input (it would see end of file before
// the run wrote a byte). A reader that is there sees no writer come and go.
TEST(OutputProblem, DoesNotOpenAFifo) {
  ScratchDir dir;
  const std::string fifo = make_fifo(dir, "pipe");
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  EXPECT_EQ(output_problem(fifo, OutputWay::Records), "");
  EXPECT_EQ(output_problem(fifo, OutputWay::Whole), "");
  pollfd p{reader, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0) << "a writer opened and closed the FIFO (revents " << p.revents << ")";
  ::close(reader);
}

// Two spellings of one file are one identity; a FIFO or a device has none
// (outputs may share one: it is written in place, never replaced).
TEST(FileIdentity, TellsWhenTwoPathsAreOneFile) {
  ScratchDir dir;
  const std::string cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  ASSERT_EQ(::mkdir("sub", 0700), 0);
  EXPECT_EQ(file_identity("new.json"), file_identity("./new.json")) << "not there yet: by its path";
  EXPECT_EQ(file_identity("new.json"), file_identity("sub/../new.json"));
  EXPECT_EQ(file_identity("new.json"), file_identity(dir.file("new.json")));
  EXPECT_NE(file_identity("new.json"), file_identity("other.json"));
  dir.write("x.ini", "batches = 2\n");
  ASSERT_EQ(::symlink("x.ini", "link.ini"), 0);
  ASSERT_EQ(::link("x.ini", "hard.ini"), 0);
  EXPECT_EQ(file_identity("x.ini"), file_identity("./x.ini"));
  EXPECT_EQ(file_identity("x.ini"), file_identity("link.ini"));
  EXPECT_EQ(file_identity("x.ini"), file_identity("hard.ini"));
  EXPECT_EQ(file_identity("/dev/null"), "");
  make_fifo(dir, "pipe");
  EXPECT_EQ(file_identity("pipe"), "");
  std::filesystem::current_path(cwd);
}

// --- every writer of whole files reports a full disk the same way -------------------------

struct Writer {
  const char* name;
  void (*write)(const std::string& path);
};

class FullDisk : public ::testing::TestWithParam<Writer> {};

TEST_P(FullDisk, OneErrorNamingTheFileAndTheDeviceStays) {
  ScratchDir dir;
  std::string why;
  const std::string full = make_full_device(dir, &why);
  if (full.empty()) GTEST_SKIP() << why;
  const std::string msg = error_of([&] { GetParam().write(full); });
  EXPECT_NE(msg.find("'" + full + "'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::strerror(ENOSPC)), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_TRUE(is_full_device(full)) << "the device node was replaced";
  EXPECT_TRUE(temporaries_of(full).empty());
}

INSTANTIATE_TEST_SUITE_P(
    Writers, FullDisk,
    ::testing::Values(Writer{"write_file", [](const std::string& p) { write_file(p, "{}\n"); }},
                      Writer{"trace",
                             [](const std::string& p) {
                               trace::start();
                               trace::span(trace::frontend_track(), "op", 1, 2, 1);
                               trace::stop_and_write(p);
                             }},
                      Writer{"summary_json",
                             [](const std::string& p) { train::write_summary_json(p, {train::RunResult{}}); }},
                      Writer{"memory_log",  // streamed, not written whole: each row checked as it goes
                             [](const std::string& p) {
                               train::MemoryLog log(p);
                               log.write(train::BatchSample{});
                             }}),
    [](const ::testing::TestParamInfo<Writer>& info) { return std::string(info.param.name); });

// --- the trace, parsed back -----------------------------------------------------------------

// Records a little of everything: an enqueue span, a counter, and a track
// whose name needs escaping.
void record_some_trace() {
  static const int odd = trace::register_track("queue \"odd\\name\"\n\t");
  trace::start();
  trace::span(trace::frontend_track(), "matmul", 10, 15, /*seq=*/7);
  trace::span(odd, "relu", 16, 20, /*seq=*/8);
  trace::counter("queue depth cpu:0", 12, 3.5);
}

void expect_trace(const amlp::Json& t) {
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t.at("displayTimeUnit"), "ms");
  const amlp::Json& events = t.at("traceEvents");
  ASSERT_TRUE(events.is_array());
  std::map<int, std::string> names;
  std::map<int, int> sort_index;
  int frontend = -1, odd = -1, spans = 0, counters = 0;
  for (const amlp::Json& e : events) {
    const std::string ph = e.at("ph").get<std::string>();
    EXPECT_EQ(e.at("pid"), 1);
    if (ph == "M" && e.at("name") == "thread_name") names[e.at("tid").get<int>()] = e.at("args").at("name").get<std::string>();
    if (ph == "M" && e.at("name") == "thread_sort_index")
      sort_index[e.at("tid").get<int>()] = e.at("args").at("sort_index").get<int>();
    EXPECT_TRUE(ph == "M" || ph == "X" || ph == "C") << e;
  }
  for (const auto& [tid, name] : names) {
    if (name == "frontend (enqueue)") frontend = tid;
    if (name == "queue \"odd\\name\"\n\t") odd = tid;  // escaped and read back exactly
    EXPECT_TRUE(sort_index.count(tid)) << name;
  }
  ASSERT_GE(frontend, 1);
  ASSERT_GE(odd, 1);
  EXPECT_EQ(sort_index[frontend], 0) << "the frontend's track first";
  EXPECT_GT(sort_index[odd], 0);
  for (const amlp::Json& e : events) {
    if (e.at("ph") == "X" && e.at("name") == "matmul") {
      ++spans;
      EXPECT_EQ(e.at("tid"), frontend);
      EXPECT_EQ(e.at("ts"), 10);
      EXPECT_EQ(e.at("dur"), 5);
      EXPECT_EQ(e.at("args").at("seq"), 7);
    }
    if (e.at("ph") == "X" && e.at("name") == "relu") {
      ++spans;
      EXPECT_EQ(e.at("tid"), odd);
      EXPECT_EQ(e.at("args").at("seq"), 8);
    }
    if (e.at("ph") == "C") {
      ++counters;
      EXPECT_EQ(e.at("name"), "queue depth cpu:0");
      EXPECT_EQ(e.at("ts"), 12);
      EXPECT_EQ(e.at("args").at("value"), 3.5);
    }
  }
  EXPECT_EQ(spans, 2);
  EXPECT_EQ(counters, 1);
}

TEST(TraceFile, IsChromeTraceJsonReadBackWithNlohmann) {
  ScratchDir dir;
  record_some_trace();
  trace::stop_and_write(dir.file("t.json"));
  EXPECT_FALSE(trace::enabled());
  expect_trace(read_json(dir.file("t.json")));
  EXPECT_TRUE(temporaries_of(dir.file("t.json")).empty());
}

TEST(TraceFile, GoesIntoAFifo) {
  ScratchDir dir;
  const std::string fifo = make_fifo(dir, "trace.pipe");
  record_some_trace();
  FifoReader reader(fifo);
  trace::stop_and_write(fifo);
  expect_trace(parse_json(reader.text()));
  EXPECT_EQ(file_type(fifo), static_cast<mode_t>(S_IFIFO));
}

// --- the run summary, parsed back -------------------------------------------------------

std::vector<train::RunResult> some_runs() {
  train::RunResult a;
  a.asked.options.sync = {train::SyncPolicy::Never, 0};  // mode "none"
  a.asked.label = "label \"quoted\"\\";
  a.measured.device = "cpu:0";
  a.asked.options.batches = 3;
  a.asked.options.batch_size = 16;
  a.measured.wall_s = 0.25;
  a.measured.mem_increase_bytes = size_t(3) << 40;  // past 32 bits
  a.measured.peak_queue_depth = 42;
  a.measured.final_loss = 0.5;
  a.measured.losses = {{1, 0.75}, {3, 0.5}};
  a.measured.batches_done = 3;
  a.measured.memory_limit_bytes = size_t(5) << 30;
  a.measured.memory_limit_source = "MemAvailable at start, less a 10% margin";
  a.asked.options.alloc = AllocPolicy::Run;
  a.asked.options.data_queue = true;
  a.measured.data_bytes_per_batch = 4096;
  a.measured.peak_data_ahead_bytes = 10240;
  a.measured.peak_data_lead_batches = 2.5;
  a.measured.working_set_bytes = 8192;
  train::RunResult b = a;
  b.asked.options.alloc = AllocPolicy::Enqueue;
  b.asked.options.data_queue = false;
  b.asked.options.sync = {train::SyncPolicy::EveryBatch, 1};         // mode "batch"
  b.measured.final_loss = std::numeric_limits<double>::quiet_NaN();  // a run that diverged
  b.measured.status = train::RunStatus::Failed;
  b.measured.error = "run 'batch' failed at batch 2 of 3: out of memory";
  b.measured.batches_done = 1;
  b.measured.memory_limit_bytes = 0;
  b.measured.memory_limit_source = "none";
  return {a, b};
}

void expect_summary(const amlp::Json& s) {
  ASSERT_TRUE(s.is_array());
  ASSERT_EQ(s.size(), 2u);
  const char* keys[] = {"mode",
                        "label",
                        "device",
                        "batches",
                        "batch_size",
                        "wall_s",
                        "samples_per_s",
                        "mem_increase_bytes",
                        "rss_increase_bytes",
                        "peak_queue_depth",
                        "peak_backlog_batches",
                        "peak_backlog_bytes",
                        "bytes_per_batch",
                        "predicted_increase_bytes",
                        "largest_tensor_bytes",
                        "alloc_policy",
                        "data_queue",
                        "data_bytes_per_batch",
                        "peak_data_ahead_bytes",
                        "peak_data_lead_batches",
                        "working_set_bytes",
                        "start_bytes",
                        "peak_bytes",
                        "end_bytes",
                        "start_rss_bytes",
                        "peak_rss_bytes",
                        "end_rss_bytes",
                        "max_pending_ops",
                        "max_pending_bytes",
                        "sync_auto",
                        "final_loss",
                        "losses",
                        "status",
                        "failed",
                        "interrupted",
                        "error",
                        "batches_done",
                        "memory_limit_bytes",
                        "memory_limit_source",
                        "minor_faults",
                        "minor_faults_per_batch",
                        "minor_faults_steady_per_batch",
                        "host_work_s",
                        "host_work_kind",
                        "host_s_per_batch",
                        "device_s_per_batch",
                        "model_every",
                        "predicted_wall_s",
                        "data_parallel",
                        "blas_threads",
                        "devices",
                        "device_allocs",
                        "ops_per_batch",
                        "fresh_bytes",
                        "fresh_s_per_gib",
                        "fresh_s",
                        "fresh_counted",
                        "d_measured",
                        "d_kernels_s",
                        "d_fresh_s",
                        "d_rest_s",
                        "fresh_worker_s",
                        "fresh_worker_populate_s",
                        "fresh_backed_bytes",
                        "fresh_populator_s",
                        "fresh_populator_bytes",
                        "distributed",
                        "ranks",
                        "comm_alpha_s",
                        "comm_beta_s_per_byte",
                        "comm_exposed_s_per_batch",
                        "graph"};
  for (const amlp::Json& run : s) {
    EXPECT_EQ(run.size(), std::size(keys));
    for (const char* key : keys) EXPECT_TRUE(run.contains(key)) << key;
  }
  EXPECT_EQ(s[0].at("mode"), "none");
  EXPECT_EQ(s[0].at("label"), "label \"quoted\"\\");
  EXPECT_FALSE(s[0].at("distributed").get<bool>());  // one process: no ranks
  EXPECT_TRUE(s[0].at("ranks").empty());
  EXPECT_EQ(s[0].at("batches"), 3);
  EXPECT_EQ(s[0].at("wall_s"), 0.25);
  EXPECT_EQ(s[0].at("mem_increase_bytes").get<uint64_t>(), uint64_t(3) << 40);
  EXPECT_EQ(s[0].at("peak_queue_depth"), 42);
  EXPECT_EQ(s[0].at("final_loss"), 0.5);
  EXPECT_EQ(s[0].at("losses"), parse_json("[[1, 0.75], [3, 0.5]]"));
  EXPECT_EQ(s[0].at("status"), "completed");
  EXPECT_EQ(s[0].at("failed"), false);
  EXPECT_EQ(s[0].at("interrupted"), false);
  EXPECT_TRUE(s[0].at("error").is_null());
  EXPECT_EQ(s[0].at("memory_limit_bytes").get<uint64_t>(), uint64_t(5) << 30);
  EXPECT_EQ(s[0].at("memory_limit_source"), "MemAvailable at start, less a 10% margin");
  EXPECT_EQ(s[0].at("alloc_policy"), "run");
  EXPECT_EQ(s[0].at("data_queue"), true);
  EXPECT_EQ(s[0].at("data_bytes_per_batch"), 4096);
  EXPECT_EQ(s[0].at("peak_data_ahead_bytes"), 10240);
  EXPECT_EQ(s[0].at("peak_data_lead_batches"), 2.5);
  EXPECT_EQ(s[0].at("working_set_bytes"), 8192);
  EXPECT_TRUE(s[0].at("graph").is_null()) << "no step graphs: no verdicts";
  EXPECT_EQ(s[1].at("alloc_policy"), "enqueue");
  EXPECT_EQ(s[1].at("data_queue"), false);
  EXPECT_EQ(s[1].at("mode"), "batch");
  EXPECT_TRUE(s[1].at("final_loss").is_null()) << "JSON has no NaN";
  EXPECT_EQ(s[1].at("status"), "failed");
  EXPECT_EQ(s[1].at("failed"), true);
  EXPECT_EQ(s[1].at("error"), "run 'batch' failed at batch 2 of 3: out of memory");
  EXPECT_EQ(s[1].at("batches_done"), 1);
  EXPECT_TRUE(s[1].at("memory_limit_bytes").is_null()) << "no limit";
  EXPECT_EQ(s[1].at("memory_limit_source"), "none");
}

TEST(SummaryJsonFile, HasEveryKeyReadBackWithNlohmann) {
  ScratchDir dir;
  train::write_summary_json(dir.file("s.json"), some_runs());
  expect_summary(read_json(dir.file("s.json")));
  EXPECT_TRUE(temporaries_of(dir.file("s.json")).empty());
}

TEST(SummaryJsonFile, GoesIntoAFifo) {
  ScratchDir dir;
  const std::string fifo = make_fifo(dir, "summary.pipe");
  FifoReader reader(fifo);
  train::write_summary_json(fifo, some_runs());
  expect_summary(parse_json(reader.text()));
  EXPECT_EQ(file_type(fifo), static_cast<mode_t>(S_IFIFO));
}

}  // namespace
}  // namespace amlp
