// env.cpp — the library's environment variables, read once (env.h). The only
// file of the library that calls getenv.
#include "framework/util/env.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "framework/parse.h"

namespace amlp {

EnvSettings read_env_settings(const EnvLookup& lookup) {
  EnvSettings s;
  // A switch: "1" on, "0" off, unset or "" its default; anything else is a
  // problem and leaves the default.
  const auto on_off = [&](const char* name, bool* value) {
    const char* v = lookup(name);
    if (!v || !*v) return;
    if (std::strcmp(v, "0") == 0 || std::strcmp(v, "1") == 0) {
      *value = v[0] == '1';
      return;
    }
    if (!s.problem.empty()) s.problem += "; ";
    s.problem += std::string("environment variable ") + name + " must be 0 or 1 (got " + quote(v) + ")";
  };
  on_off("ASYNCMLP_BLOCKING", &s.blocking);
  on_off("ASYNCMLP_SEGMENTS", &s.segments);
  on_off("ASYNCMLP_POPULATOR_NORMAL", &s.populator_normal_priority);
  on_off("ASYNCMLP_LT", &s.lt_epilogues);
  if (const char* v = lookup("ASYNCMLP_CANDIDATES"); v && *v) {
    std::string list(v), known;
    for (const CandidateInfo& c : kCandidates) known += std::string(known.empty() ? "" : ", ") + c.name;
    for (size_t at = 0; at <= list.size();) {
      const size_t comma = std::min(list.find(',', at), list.size());
      const std::string name = list.substr(at, comma - at);
      at = comma + 1;
      unsigned bit = 0;
      if (name == "all")
        for (const CandidateInfo& c : kCandidates) bit |= c.bit;
      for (const CandidateInfo& c : kCandidates)
        if (name == c.name) bit = c.bit;
      if (!bit) {
        if (!s.problem.empty()) s.problem += "; ";
        s.problem +=
            "environment variable ASYNCMLP_CANDIDATES names " + quote(name) + ", not a candidate (" + known + ", all)";
        s.candidates = 0;  // nothing runs under a list nobody meant
        break;
      }
      s.candidates |= bit;
    }
  }
  const auto set = [&](const char* name) { return lookup(name) != nullptr; };
  s.launched_by_mpirun = set("OMPI_COMM_WORLD_SIZE") || set("PMI_SIZE") || set("PMIX_RANK");
  return s;
}

const CandidateInfo kCandidates[3] = {
    {"out_gemv", kCandidateOutGemv, "a one-unit layer's forward as a GEMV kernel of ours"},
    {"out_grad", kCandidateOutGrad,
     "a one-unit layer's input gradient, the ReLU mask and the bias gradient in one kernel"},
    {"worker_spin", kCandidateWorkerSpin, "a worker that caught up watches for a push 50 us before it sleeps"},
};

bool candidate_on(Candidate c) { return (env_settings().candidates & c) != 0; }

const EnvSettings& env_settings() {
  static const EnvSettings s = read_env_settings([](const char* name) -> const char* { return std::getenv(name); });
  return s;
}

}  // namespace amlp
