// env.cpp — the library's environment variables, read once (env.h). The only
// file of the library that calls getenv.
#include "framework/util/env.h"

#include <cstdlib>
#include <cstring>

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
  const auto set = [&](const char* name) { return lookup(name) != nullptr; };
  s.launched_by_mpirun = set("OMPI_COMM_WORLD_SIZE") || set("PMI_SIZE") || set("PMIX_RANK");
  return s;
}

const EnvSettings& env_settings() {
  static const EnvSettings s = read_env_settings([](const char* name) -> const char* { return std::getenv(name); });
  return s;
}

}  // namespace amlp
