// train_test_util.h — running the real train_mlp binary (or any command) from
// a test, a scratch directory that cleans up after itself, and in it a full
// "disk", a FIFO with a reader, and a look for a writer's leftover temporaries.
//
//   ScratchDir dir;                                   // /tmp/asyncmlp_test.XXXXXX
//   Ran r = run_train_mlp("--batches 0 --memory-log " + dir.file("m.csv"));
//   EXPECT_EQ(r.code, 2); EXPECT_EQ(r.err_lines(), 1); EXPECT_TRUE(dir.empty());
#pragma once
#include <fcntl.h>
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
#include <future>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace amlp::testing {

class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "asyncmlp_test.XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data())) path_ = buf.data();
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  bool empty() const { return std::filesystem::is_empty(path_); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(file(name)) << text;
    return file(name);
  }

 private:
  std::string path_;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The whole file as JSON; throws nlohmann::json::parse_error when it is not.
inline nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_file(path)); }

inline std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// A private character device MAJOR:MINOR at DIR/NAME, or, where this process
// may not make device nodes (not root) and the machine's own node is that
// device, `fallback` (/dev/full, /dev/null): unprivileged, a broken writer
// could not replace it, so it is safe to aim at. "" and the reason in *why
// when neither can be written to.
inline std::string make_char_device(const ScratchDir& dir, const std::string& name, unsigned major,
                                    unsigned minor, const std::string& fallback, std::string* why) {
  std::string path = dir.file(name);
  if (::mknod(path.c_str(), S_IFCHR | 0666, makedev(major, minor)) != 0) {
    *why = std::string("mknod is not permitted here: ") + std::strerror(errno);
    struct stat st {};
    if (::geteuid() == 0 || ::lstat(fallback.c_str(), &st) != 0 || !S_ISCHR(st.st_mode) ||
        st.st_rdev != makedev(major, minor))
      return "";
    path = fallback;
  }
  const int fd = ::open(path.c_str(), O_WRONLY);
  if (fd < 0) {
    *why = "device " + path + " cannot be opened here (a nodev mount?): " + std::strerror(errno);
    if (path != fallback) ::unlink(path.c_str());
    return "";
  }
  ::close(fd);
  return path;
}

// A device every write to which fails with ENOSPC (what /dev/full is, 1:7):
// a private node DIR/full when running as root, else /dev/full itself.
inline std::string make_full_device(const ScratchDir& dir, std::string* why) {
  return make_char_device(dir, "full", 1, 7, "/dev/full", why);
}

// Still the character device 1:7 (not replaced by a file).
inline bool is_full_device(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 7);
}

// The writer's temporaries for `path` (PATH.tmp*) still in its directory.
inline std::vector<std::string> temporaries_of(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string prefix = p.filename().string() + ".tmp";
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(p.parent_path(), ec))
    if (e.path().filename().string().rfind(prefix, 0) == 0) found.push_back(e.path().string());
  return found;
}

// DIR/NAME made a FIFO.
inline std::string make_fifo(const ScratchDir& dir, const std::string& name) {
  const std::string path = dir.file(name);
  if (::mkfifo(path.c_str(), 0600) != 0) ADD_FAILURE() << "mkfifo " << path << ": " << std::strerror(errno);
  return path;
}

// Reads a FIFO to its end on another thread, as a consumer (a pipe into a
// script) would. It also holds a write end of its own until text() is asked
// for, after the writer under test is done: so the writer never waits for a
// reader, and a writer that never opened the FIFO (or replaced it by a file)
// makes text() return what arrived, "", instead of waiting for ever.
class FifoReader {
 public:
  explicit FifoReader(const std::string& path)
      : read_(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)),
        hold_(::open(path.c_str(), O_RDWR | O_CLOEXEC)) {
    if (read_ < 0 || hold_ < 0) ADD_FAILURE() << "cannot open FIFO " << path << ": " << std::strerror(errno);
    if (read_ >= 0) ::fcntl(read_, F_SETFL, ::fcntl(read_, F_GETFL) & ~O_NONBLOCK);
    text_ = std::async(std::launch::async, [fd = read_] {
      std::string out;
      char buf[65536];
      for (ssize_t n; fd >= 0 && (n = ::read(fd, buf, sizeof buf)) != 0;) {
        if (n > 0) out.append(buf, static_cast<size_t>(n));
        else if (errno != EINTR) break;
      }
      return out;
    });
  }
  ~FifoReader() {
    if (text_.valid()) text();
  }
  FifoReader(const FifoReader&) = delete;
  FifoReader& operator=(const FifoReader&) = delete;

  // Everything read, once the writer under test has closed its end.
  std::string text() {
    if (hold_ >= 0) ::close(std::exchange(hold_, -1));
    std::string out = text_.get();
    if (read_ >= 0) ::close(std::exchange(read_, -1));
    return out;
  }

 private:
  int read_, hold_;
  std::future<std::string> text_;
};

struct Ran {
  int code = -1;  // exit status, -1 if it did not exit normally
  std::string out, err;
  size_t err_lines() const { return split_lines(err).size(); }
};

// Runs a shell command line, capturing both streams.
inline Ran run_command(const std::string& command) {
  ScratchDir io;
  const std::string cmd = command + " >" + io.file("out") + " 2>" + io.file("err") + " </dev/null";
  const int st = std::system(cmd.c_str());
  Ran r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = read_file(io.file("out"));
  r.err = read_file(io.file("err"));
  return r;
}

// Runs build/bin/<program> with `args` (shell words), capturing both streams.
inline Ran run_program(const std::string& program, const std::string& args) {
  return run_command(std::string(ASYNCMLP_BIN_DIR) + "/" + program + " " + args);
}

inline Ran run_train_mlp(const std::string& args) { return run_program("train_mlp", args); }

}  // namespace amlp::testing
