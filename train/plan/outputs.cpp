// outputs.cpp — the files a run will write (outputs.h).
#include "train/plan/outputs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "train/plan/plan.h"

namespace amlp::train {

std::string tagged_path(const std::string& path, const std::string& tag) {
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == slash + 1)
    return path + "." + tag;
  return path.substr(0, dot) + "." + tag + path.substr(dot);
}

std::string fraction_tag(double f) {
  char t[32];
  std::snprintf(t, sizeof t, "h%gd", f);
  return t;
}

std::vector<OutputFile> output_files(const Options& o) {
  std::vector<OutputFile> files;
  if (!o.memory_log.empty() && o.sweep) {  // --sweep: --compare's logs for each fraction (train/studies/sweep.h)
    Options c = o;
    c.compare = true;
    for (double f : o.sweep_fractions) {
      c.memory_log = tagged_path(o.memory_log, fraction_tag(f));
      for (const RunSpec& p : plan_runs(c)) files.push_back({"memory-log", p.memory_log});
    }
  } else if (!o.memory_log.empty()) {
    for (const RunSpec& p : plan_runs(o)) files.push_back({"memory-log", p.memory_log});
  }
  if (!o.trace.empty()) files.push_back({"trace", o.trace});
  if (!o.summary_json.empty()) files.push_back({"summary-json", o.summary_json});
  if (!o.save.empty()) files.push_back({"save", o.save});
  return files;
}

std::string output_path_problem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return "it is a directory";
    if (::access(path.c_str(), W_OK) != 0) return std::strerror(errno);
    return "";
  }
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  if (::stat(dir.c_str(), &st) != 0) return "directory '" + dir + "' does not exist";
  if (!S_ISDIR(st.st_mode)) return "'" + dir + "' is not a directory";
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return "directory '" + dir + "': " + std::strerror(errno);
  return "";
}

std::string outputs_problem(const Options& o) {
  for (const OutputFile& f : output_files(o))
    if (std::string why = output_path_problem(f.path); !why.empty())
      return "--" + f.option + ": cannot write '" + f.path + "': " + why;
  return "";
}

}  // namespace amlp::train
