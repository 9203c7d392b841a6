// env.cpp — the library's environment variables, read once (env.h). The only
// file of the library that calls getenv.
#include "framework/core/env.h"

#include <cstdlib>
#include <cstring>

namespace amlp {

EnvSettings read_env_settings(const EnvLookup& lookup) {
  auto set = [&](const char* name) { return lookup(name) != nullptr; };
  auto is = [&](const char* name, const char* value) {
    const char* v = lookup(name);
    return v && std::strcmp(v, value) == 0;
  };
  EnvSettings s;
  s.blocking = set("ASYNCMLP_BLOCKING") && !is("ASYNCMLP_BLOCKING", "") && !is("ASYNCMLP_BLOCKING", "0");
  s.segments = !is("ASYNCMLP_SEGMENTS", "0");
  s.populator_normal_priority = set("ASYNCMLP_POPULATOR_NORMAL");
  s.lt_epilogues = is("ASYNCMLP_LT", "1");
  s.launched_by_mpirun = set("OMPI_COMM_WORLD_SIZE") || set("PMI_SIZE") || set("PMIX_RANK");
  return s;
}

const EnvSettings& env_settings() {
  static const EnvSettings s = read_env_settings([](const char* name) -> const char* { return std::getenv(name); });
  return s;
}

}  // namespace amlp
