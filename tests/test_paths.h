// test_paths.h — where a test finds the programs it starts and the source
// tree's files it reads, from where its own executable lies, so a build folder
// runs wherever it is copied (a GPU machine, another folder):
//
//   bin_dir()     $ASYNCMLP_BIN_DIR, else this executable's folder (build/bin)
//   source_dir()  $ASYNCMLP_SOURCE_DIR, else the nearest folder above the
//                 executable that holds configs/ and tools/ (the repository root
//                 for build folders inside it)
//   source_file("configs/d2l.ini")
//
// Nothing here is compiled in: a build folder moved away from its source tree
// runs with ASYNCMLP_SOURCE_DIR set.
#pragma once
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace amlp::testing {

// The folder of the running executable (/proc/self/exe resolved).
inline std::string exe_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot read /proc/self/exe: " + ec.message());
  return exe.parent_path().string();
}

inline std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::string();
}

inline std::string bin_dir() {
  const std::string env = env_or_empty("ASYNCMLP_BIN_DIR");
  return env.empty() ? exe_dir() : env;
}

// The first of `start` and its ancestors holding configs/ and tools/, or "".
inline std::string find_source_root(const std::filesystem::path& start) {
  std::error_code ec;
  for (std::filesystem::path p = start; !p.empty(); p = p.parent_path()) {
    if (std::filesystem::is_directory(p / "configs", ec) && std::filesystem::is_directory(p / "tools", ec))
      return p.string();
    if (p == p.parent_path()) break;
  }
  return "";
}

inline std::string source_dir() {
  const std::string env = env_or_empty("ASYNCMLP_SOURCE_DIR");
  if (!env.empty()) return env;
  const std::string found = find_source_root(exe_dir());
  if (found.empty())
    throw std::runtime_error("no source tree (configs/ and tools/) above " + exe_dir() +
                             ": set ASYNCMLP_SOURCE_DIR to the repository root");
  return found;
}

inline std::string source_file(const std::string& relative) { return source_dir() + "/" + relative; }
inline std::string program_path(const std::string& program) { return bin_dir() + "/" + program; }

}  // namespace amlp::testing
