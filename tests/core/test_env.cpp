// test_env.cpp — framework/core/env.h: what each environment variable's
// values mean (unset, "", "0", "1", anything else), through
// read_env_settings over a fake environment; and env_settings(), read once
// from the process's own.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "framework/core/env.h"

namespace amlp {
namespace {

// The settings of an environment that holds `vars` alone.
EnvSettings parse(const std::map<std::string, std::string>& vars) {
  return read_env_settings([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

// A variable's value, or unset.
struct Value {
  const char* text;  // null: unset
  bool expected;
};

std::map<std::string, std::string> only(const char* name, const char* text) {
  if (!text) return {};
  return {{name, text}};
}

TEST(EnvSettings, EmptyEnvironmentGivesTheDefaults) {
  const EnvSettings s = parse({});
  const EnvSettings d;
  EXPECT_FALSE(s.blocking);
  EXPECT_TRUE(s.segments);
  EXPECT_FALSE(s.populator_normal_priority);
  EXPECT_FALSE(s.lt_epilogues);
  EXPECT_FALSE(s.launched_by_mpirun);
  EXPECT_EQ(s.blocking, d.blocking);
  EXPECT_EQ(s.segments, d.segments);
  EXPECT_EQ(s.populator_normal_priority, d.populator_normal_priority);
  EXPECT_EQ(s.lt_epilogues, d.lt_epilogues);
  EXPECT_EQ(s.launched_by_mpirun, d.launched_by_mpirun);
}

// On for anything but unset, "" and "0".
TEST(EnvSettings, BlockingIsOnForAnyValueButEmptyOrZero) {
  for (const Value& v : {Value{nullptr, false}, Value{"", false}, Value{"0", false}, Value{"1", true},
                         Value{"yes", true}, Value{"00", true}, Value{" 0", true}, Value{"false", true}})
    EXPECT_EQ(parse(only("ASYNCMLP_BLOCKING", v.text)).blocking, v.expected)
        << "ASYNCMLP_BLOCKING=" << (v.text ? v.text : "(unset)");
}

// Off for exactly "0", on otherwise.
TEST(EnvSettings, SegmentsAreOffOnlyForZero) {
  for (const Value& v : {Value{nullptr, true}, Value{"", true}, Value{"0", false}, Value{"1", true},
                         Value{"00", true}, Value{"off", true}})
    EXPECT_EQ(parse(only("ASYNCMLP_SEGMENTS", v.text)).segments, v.expected)
        << "ASYNCMLP_SEGMENTS=" << (v.text ? v.text : "(unset)");
}

// On for exactly "1", off otherwise.
TEST(EnvSettings, LtEpiloguesAreOnOnlyForOne) {
  for (const Value& v : {Value{nullptr, false}, Value{"", false}, Value{"0", false}, Value{"1", true},
                         Value{"1 ", false}, Value{"yes", false}})
    EXPECT_EQ(parse(only("ASYNCMLP_LT", v.text)).lt_epilogues, v.expected)
        << "ASYNCMLP_LT=" << (v.text ? v.text : "(unset)");
}

// Set at all, to anything, "" and "0" included: normal priority.
TEST(EnvSettings, PopulatorNormalPriorityIsOnWheneverSet) {
  for (const Value& v : {Value{nullptr, false}, Value{"", true}, Value{"0", true}, Value{"1", true}})
    EXPECT_EQ(parse(only("ASYNCMLP_POPULATOR_NORMAL", v.text)).populator_normal_priority, v.expected)
        << "ASYNCMLP_POPULATOR_NORMAL=" << (v.text ? v.text : "(unset)");
}

// Any one of the three launchers' variables, set to anything.
TEST(EnvSettings, LaunchedByMpirunWhenAnyLauncherVariableIsSet) {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    for (const char* text : {"2", "0", ""}) EXPECT_TRUE(parse({{name, text}}).launched_by_mpirun) << name << "=" << text;
  EXPECT_FALSE(parse({{"OMPI_COMM_WORLD_RANK", "0"}, {"PMI_RANK", "0"}}).launched_by_mpirun);
}

// Each variable sets its own field alone.
TEST(EnvSettings, EachVariableSetsItsOwnFieldAlone) {
  const EnvSettings s = parse({{"ASYNCMLP_BLOCKING", "1"}});
  EXPECT_TRUE(s.blocking);
  EXPECT_TRUE(s.segments);
  EXPECT_FALSE(s.populator_normal_priority);
  EXPECT_FALSE(s.lt_epilogues);
  EXPECT_FALSE(s.launched_by_mpirun);
  const EnvSettings t = parse({{"ASYNCMLP_SEGMENTS", "0"}, {"ASYNCMLP_LT", "1"}});
  EXPECT_FALSE(t.blocking);
  EXPECT_FALSE(t.segments);
  EXPECT_TRUE(t.lt_epilogues);
  EXPECT_FALSE(t.populator_normal_priority);
}

// env_settings() is the process's environment, parsed the same way, read at
// the first call and never again: a later setenv changes nothing.
TEST(EnvSettings, ProcessSettingsAreReadOnceFromTheEnvironment) {
  const EnvSettings now = read_env_settings([](const char* name) -> const char* { return std::getenv(name); });
  const EnvSettings& s = env_settings();
  EXPECT_EQ(&s, &env_settings());
  EXPECT_EQ(s.blocking, now.blocking);
  EXPECT_EQ(s.segments, now.segments);
  EXPECT_EQ(s.populator_normal_priority, now.populator_normal_priority);
  EXPECT_EQ(s.lt_epilogues, now.lt_epilogues);
  EXPECT_EQ(s.launched_by_mpirun, now.launched_by_mpirun);

  const char* was = std::getenv("ASYNCMLP_SEGMENTS");
  const std::string saved = was ? was : "";
  const bool before = s.segments;
  ASSERT_EQ(::setenv("ASYNCMLP_SEGMENTS", before ? "0" : "1", 1), 0);
  EXPECT_EQ(env_settings().segments, before);
  if (was) ::setenv("ASYNCMLP_SEGMENTS", saved.c_str(), 1);
  else ::unsetenv("ASYNCMLP_SEGMENTS");
}

}  // namespace
}  // namespace amlp
