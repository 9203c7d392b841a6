// Covers framework/util/env.cpp, check_environment() (framework/core/runtime.cpp)
// and a device's first use (framework/core/context.cpp): what each environment
// variable's values mean (unset, "", "0", "1", anything else), through
// read_env_settings over a fake environment; a value a variable does not take
// is one line naming it, which check_environment() throws as EnvError and
// which stops a device's first use; and env_settings(), read once from the
// process's own.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "framework/util/env.h"
#include "framework/error.h"
#include "framework/parse.h"
#include "framework/runtime.h"

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

// The library's on/off variables, each with its value when unset.
struct Switch {
  const char* name;
  bool EnvSettings::*field;
  bool unset;
};
const Switch kSwitches[] = {
    {"ASYNCMLP_BLOCKING", &EnvSettings::blocking, false},
    {"ASYNCMLP_SEGMENTS", &EnvSettings::segments, true},
    {"ASYNCMLP_POPULATOR_NORMAL", &EnvSettings::populator_normal_priority, false},
    {"ASYNCMLP_LT", &EnvSettings::lt_epilogues, false},
};

TEST(EnvSettings, EmptyEnvironmentGivesTheDefaults) {
  const EnvSettings s = parse({});
  const EnvSettings d;
  EXPECT_FALSE(s.blocking);
  EXPECT_TRUE(s.segments);
  EXPECT_FALSE(s.populator_normal_priority);
  EXPECT_FALSE(s.lt_epilogues);
  EXPECT_FALSE(s.launched_by_mpirun);
  EXPECT_EQ(s.problem, "");
  EXPECT_EQ(s.blocking, d.blocking);
  EXPECT_EQ(s.segments, d.segments);
  EXPECT_EQ(s.populator_normal_priority, d.populator_normal_priority);
  EXPECT_EQ(s.lt_epilogues, d.lt_epilogues);
  EXPECT_EQ(s.launched_by_mpirun, d.launched_by_mpirun);
}

// Each switch: "1" on, "0" off, unset and "" its default; nothing else is a
// problem.
TEST(EnvSettings, EachSwitchTakesZeroOrOneAndEmptyOrUnsetIsItsDefault) {
  for (const Switch& sw : kSwitches)
    for (const Value& v : {Value{nullptr, sw.unset}, Value{"", sw.unset}, Value{"0", false}, Value{"1", true}}) {
      const EnvSettings s = parse(only(sw.name, v.text));
      EXPECT_EQ(s.*sw.field, v.expected) << sw.name << "=" << (v.text ? v.text : "(unset)");
      EXPECT_EQ(s.problem, "") << sw.name << "=" << (v.text ? v.text : "(unset)");
    }
}

// Any other value is one line naming the variable and the value (escaped),
// and the switch keeps its default: garbage never means on.
TEST(EnvSettings, AnyOtherValueIsAProblemNamingTheVariableAndItsValue) {
  for (const Switch& sw : kSwitches)
    for (const char* text : {"garbage", "yes", "true", "on", "00", " 0", "1 ", "2", "-1", "+1", "0x1", "1\n"}) {
      const EnvSettings s = parse(only(sw.name, text));
      EXPECT_EQ(s.*sw.field, sw.unset) << sw.name << "=" << text;
      EXPECT_NE(s.problem.find(std::string("environment variable ") + sw.name + " must be 0 or 1"), std::string::npos)
          << s.problem;
      EXPECT_NE(s.problem.find(quote(text)), std::string::npos) << s.problem;
      EXPECT_EQ(s.problem.find('\n'), std::string::npos) << s.problem;
    }
}

// Two bad variables: both named, on one line, in a fixed order.
TEST(EnvSettings, EveryBadVariableIsNamedOnOneLine) {
  const EnvSettings s = parse({{"ASYNCMLP_BLOCKING", "garbage"}, {"ASYNCMLP_POPULATOR_NORMAL", "yes"}});
  EXPECT_EQ(s.problem,
            "environment variable ASYNCMLP_BLOCKING must be 0 or 1 (got 'garbage'); "
            "environment variable ASYNCMLP_POPULATOR_NORMAL must be 0 or 1 (got 'yes')");
}

// Any one of the three launchers' variables, set to anything.
TEST(EnvSettings, LaunchedByMpirunWhenAnyLauncherVariableIsSet) {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    for (const char* text : {"2", "0", ""}) {
      const EnvSettings s = parse({{name, text}});
      EXPECT_TRUE(s.launched_by_mpirun) << name << "=" << text;
      EXPECT_EQ(s.problem, "") << name << "=" << text;
    }
  EXPECT_FALSE(parse({{"OMPI_COMM_WORLD_RANK", "0"}, {"PMI_RANK", "0"}}).launched_by_mpirun);
}

// ASYNCMLP_CANDIDATES: a comma-separated list of names or "all"; any other
// name is one line naming it and the known ones, and turns nothing on.
TEST(EnvSettings, CandidatesAreOffUnlessNamedAndAnUnknownNameIsOneLine) {
  const auto named = [](const char* list) { return parse(only("ASYNCMLP_CANDIDATES", list)); };
  EXPECT_EQ(parse({}).candidates, 0u);
  EXPECT_EQ(named("").candidates, 0u);
  EXPECT_EQ(named("out_gemv").candidates, unsigned(kCandidateOutGemv));
  EXPECT_EQ(named("out_grad").candidates, unsigned(kCandidateOutGrad));
  EXPECT_EQ(named("out_grad,out_gemv").candidates, unsigned(kCandidateOutGemv | kCandidateOutGrad));
  EXPECT_EQ(named("worker_spin").candidates, unsigned(kCandidateWorkerSpin));
  EXPECT_EQ(named("all").candidates, unsigned(kCandidateOutGemv | kCandidateOutGrad | kCandidateWorkerSpin));
  EXPECT_EQ(named("out_gemv").problem, "");
  for (const char* bad : {"bogus", "out_gemv,bogus", "out_gemv,", "OUT_GEMV", " out_gemv"}) {
    const EnvSettings s = named(bad);
    EXPECT_EQ(s.candidates, 0u) << bad;  // nothing runs under a list nobody meant
    EXPECT_NE(s.problem.find("environment variable ASYNCMLP_CANDIDATES names"), std::string::npos) << s.problem;
    EXPECT_NE(s.problem.find("out_gemv, out_grad, worker_spin, all"), std::string::npos) << s.problem;
    EXPECT_EQ(s.problem.find('\n'), std::string::npos) << s.problem;
  }
  unsigned bits = 0;
  for (const CandidateInfo& c : kCandidates) {
    EXPECT_EQ(bits & c.bit, 0u) << c.name << ": a bit of its own";
    bits |= c.bit;
    // This process's setting is its environment's (unset in the test command: all off).
    EXPECT_EQ(candidate_on(c.bit), (env_settings().candidates & c.bit) != 0) << c.name;
  }
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
  const EnvSettings u = parse({{"ASYNCMLP_BLOCKING", "garbage"}, {"ASYNCMLP_LT", "1"}});
  EXPECT_FALSE(u.blocking);
  EXPECT_TRUE(u.lt_epilogues);  // a good variable beside a bad one still reads
}

// env_settings() is the process's environment, parsed the same way, read at
// the first call and never again: a later setenv changes nothing; so
// check_environment() passes here (CTest sets ASYNCMLP_BLOCKING=0).
TEST(EnvSettings, ProcessSettingsAreReadOnceFromTheEnvironment) {
  const EnvSettings now = read_env_settings([](const char* name) -> const char* { return std::getenv(name); });
  const EnvSettings& s = env_settings();
  EXPECT_EQ(&s, &env_settings());
  EXPECT_EQ(s.blocking, now.blocking);
  EXPECT_EQ(s.segments, now.segments);
  EXPECT_EQ(s.populator_normal_priority, now.populator_normal_priority);
  EXPECT_EQ(s.lt_epilogues, now.lt_epilogues);
  EXPECT_EQ(s.launched_by_mpirun, now.launched_by_mpirun);
  EXPECT_EQ(s.problem, now.problem);

  const char* was = std::getenv("ASYNCMLP_SEGMENTS");
  const std::string saved = was ? was : "";
  const bool before = s.segments;
  ASSERT_EQ(::setenv("ASYNCMLP_SEGMENTS", "garbage", 1), 0);
  EXPECT_EQ(env_settings().segments, before);
  EXPECT_EQ(env_settings().problem, now.problem);
  if (now.problem.empty()) EXPECT_NO_THROW(check_environment());
  if (was) ::setenv("ASYNCMLP_SEGMENTS", saved.c_str(), 1);
  else ::unsetenv("ASYNCMLP_SEGMENTS");
}

// Under a bad variable, check_environment() throws EnvError with the one
// line, and so does the first use of a device: nothing runs with a setting
// the user did not ask for. A child process, so this one's settings stay.
TEST(EnvSettingsDeathTest, ABadVariableStopsTheFirstUseOfADevice) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // re-executes: the child reads its own environment
  const char* was = std::getenv("ASYNCMLP_POPULATOR_NORMAL");
  const std::string saved = was ? was : "";
  ASSERT_EQ(::setenv("ASYNCMLP_POPULATOR_NORMAL", "0x1", 1), 0);
  const auto first_use = [](bool device) {
    try {
      if (device) (void)memory_stats(Device::cpu(0));
      else check_environment();
    } catch (const EnvError& e) {
      std::fprintf(stderr, "EnvError: %s\n", e.what());
      std::exit(2);
    }
    std::exit(0);
  };
  const std::string says = "EnvError: environment variable ASYNCMLP_POPULATOR_NORMAL must be 0 or 1 \\(got '0x1'\\)";
  EXPECT_EXIT(first_use(false), ::testing::ExitedWithCode(2), says);
  EXPECT_EXIT(first_use(true), ::testing::ExitedWithCode(2), says);
  if (was) ::setenv("ASYNCMLP_POPULATOR_NORMAL", saved.c_str(), 1);
  else ::unsetenv("ASYNCMLP_POPULATOR_NORMAL");
}

}  // namespace
}  // namespace amlp
