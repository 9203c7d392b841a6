// train_test_util.h — running the real train_mlp binary (or any command) from
// a test, and a scratch directory that cleans up after itself.
//
//   ScratchDir dir;                                   // /tmp/asyncmlp_test.XXXXXX
//   Ran r = run_train_mlp("--batches 0 --memory-log " + dir.file("m.csv"));
//   EXPECT_EQ(r.code, 2); EXPECT_EQ(r.err_lines(), 1); EXPECT_TRUE(dir.empty());
#pragma once
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
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

inline std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

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
