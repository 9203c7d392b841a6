// env.h — every environment variable the library reads, read in one place,
// once per process (the first call of env_settings(), from any thread), and
// never again: setting a variable later changes nothing. docs/cli.md lists
// them for users.
//
//   if (env_settings().blocking) ...           // ASYNCMLP_BLOCKING, as the process started
//   check_environment();                       // runtime.h: throws EnvError on a value a variable does not take
//
// Each field says what its variable means, the values it takes and its value
// when the variable is unset. The library's own switches take exactly "0"
// and "1"; unset or empty is the default; anything else is a problem (one
// line naming the variable and its value), the switch keeps its default, and
// check_environment() throws it, as does a device's first use (context.cpp),
// so nothing runs under a setting nobody asked for. Reading never throws,
// so a worker thread may read a setting. read_env_settings() is the parsing
// alone, over any lookup, so a test can check each value without touching the
// process's environment.
#pragma once
#include <functional>
#include <string>

#include "framework/util/candidates.h"

namespace amlp {

struct EnvSettings {
  // ASYNCMLP_BLOCKING: synchronous mode for every queue from the start, like
  // `--blocking` and set_blocking(true) (runtime.h). "1": on; "0", "" or
  // unset: off.
  bool blocking = false;

  // ASYNCMLP_SEGMENTS: a GPU's pool carves its blocks out of growing segments
  // (segments.h). "0": off, every block is its own cudaMalloc; "1", "" or
  // unset: on. CPU pools never use segments.
  bool segments = true;

  // ASYNCMLP_POPULATOR_NORMAL: the CPU arena's populator (the thread that
  // backs fresh memory ahead of the worker, cpu/host_arena.h) runs at normal
  // priority. "1": normal; "0", "" or unset: idle priority (SCHED_IDLE).
  bool populator_normal_priority = false;

  // ASYNCMLP_LT: a Dense layer's GEMMs go through cuBLASLt with the bias,
  // the ReLU and their gradients fused as epilogues (cuda/lt_gemm.h). "1":
  // on; "0", "" or unset: cuBLAS's SGEMM and a separate pass, which measured
  // faster on an H200 at batch 64 and 1024 (docs/gpu.md, "The fused
  // epilogues").
  bool lt_epilogues = false;

  // ASYNCMLP_CANDIDATES: GPU kernel candidates, each off until measured
  // faster (docs/gpu.md, "Candidates"), named comma-separated; "all" turns
  // every one on; "", unset: none. Each gives the same numbers as the
  // default on the CPU (bitwise) and within the CUDA tests' bounds on a GPU.
  // An unknown name is a problem (one line naming it and the known ones).
  unsigned candidates = 0;  // a bit per Candidate

  // OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK: the process was started by an
  // MPI launcher (mpirun, srun, ...) when any of them is set, to any value
  // (the launcher's variables, not ours: no value is a problem); none set: a
  // process alone, rank 0 of 1 (process_group.h).
  bool launched_by_mpirun = false;

  // The switches above set to a value they do not take, in one line, each
  // "environment variable ASYNCMLP_BLOCKING must be 0 or 1 (got 'yes')",
  // joined by "; "; "" when there is none.
  std::string problem;
};

// The process's settings, read from its environment at the first call
// (thread-safe: a function-local static). Never throws.
const EnvSettings& env_settings();

// The parsing alone: each variable's value from `lookup` (null for unset),
// e.g. std::getenv. env_settings() is read_env_settings(std::getenv).
using EnvLookup = std::function<const char*(const char* name)>;
EnvSettings read_env_settings(const EnvLookup& lookup);

}  // namespace amlp
