// mpi_job.h — what the tests under mpirun share: a shell command run to its
// end (its exit status, seconds and output) and a count of output lines.
//
//   Job j = run_job_command("mpirun -np 2 prog 2>&1");
//   EXPECT_EQ(count_lines_with(j.output, "trained"), 2);
#pragma once
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>

namespace amlp::testing {

struct Job {
  int status = -1;  // the exit status (128 + the signal when killed; -1: it did not start)
  double seconds = 0;
  std::string output;  // what the command wrote to the pipe (append 2>&1 for stderr too)
};

inline Job run_job_command(const std::string& cmd) {
  Job job;
  const auto t0 = std::chrono::steady_clock::now();
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return job;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) job.output.append(buf, n);
  const int st = pclose(p);
  job.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  job.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return job;
}

inline int count_lines_with(const std::string& text, const std::string& what) {
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(what) != std::string::npos;
  return n;
}

}  // namespace amlp::testing
