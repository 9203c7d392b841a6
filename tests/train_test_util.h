// train_test_util.h — running the real train_mlp binary from a test, a
// scratch directory that cleans up after itself, and a full "disk" in it.
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
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
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

// DIR/full: a private character device 1:7 — what /dev/full is, every write
// fails with ENOSPC — so a test fills "the disk" without going near the
// machine's own /dev/full. "" and the reason in *why where this process may
// not make or open device nodes.
inline std::string make_full_device(const ScratchDir& dir, std::string* why) {
  const std::string path = dir.file("full");
  if (::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0) {
    *why = std::string("mknod is not permitted here: ") + std::strerror(errno);
    return "";
  }
  const int fd = ::open(path.c_str(), O_WRONLY);
  if (fd < 0) {
    *why = std::string("a device node cannot be opened here (a nodev mount?): ") + std::strerror(errno);
    ::unlink(path.c_str());
    return "";
  }
  ::close(fd);
  return path;
}

// Still the character device 1:7 that make_full_device made (not replaced by a file).
inline bool is_full_device(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 7);
}

struct Ran {
  int code = -1;  // exit status, -1 if it did not exit normally
  std::string out, err;
  size_t err_lines() const { return split_lines(err).size(); }
};

// Runs build/bin/<program> with `args` (shell words), capturing both streams.
inline Ran run_program(const std::string& program, const std::string& args) {
  ScratchDir io;
  const std::string cmd = std::string(ASYNCMLP_BIN_DIR) + "/" + program + " " + args + " >" + io.file("out") +
                          " 2>" + io.file("err") + " </dev/null";
  const int st = std::system(cmd.c_str());
  Ran r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = read_file(io.file("out"));
  r.err = read_file(io.file("err"));
  return r;
}

inline Ran run_train_mlp(const std::string& args) { return run_program("train_mlp", args); }

}  // namespace amlp::testing
