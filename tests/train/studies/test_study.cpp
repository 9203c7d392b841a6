// Covers train/studies/study.cpp (the studies' registry and the runner's choice).
// Each study registers itself in its own file; for given options the runner
// gets the settling studies first, by rank, and then exactly one that makes
// the runs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "train/options/options.h"
#include "train/studies/study.h"

namespace amlp::train {
namespace {

std::vector<std::string> names(const std::vector<StudyEntry>& es) {
  std::vector<std::string> n;
  for (const StudyEntry& e : es) n.push_back(e.name);
  return n;
}

Options parsed(const std::vector<std::string>& args) {
  ParseOutcome p = parse_options(args);
  EXPECT_EQ(p.status, ParseStatus::Run) << p.message;
  return p.options;
}

TEST(Studies, EveryStudyRegistersItselfSettlersFirst) {
  EXPECT_EQ(names(registered_studies()), (std::vector<std::string>{"host-work match", "sync auto", "sweep", "compare",
                                                                   "compare-policies", "single run"}));
}

TEST(Studies, TheOptionsPickTheSettlersAndOneRunMaker) {
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> cases = {
      {{}, {"single run"}},
      {{"--compare"}, {"compare"}},
      {{"--compare-policies"}, {"compare-policies"}},
      {{"--sweep"}, {"sweep"}},
      {{"--compare", "--host-work", "match"}, {"host-work match", "compare"}},
      {{"--sync", "auto", "--memory-budget", "1GiB"}, {"sync auto", "single run"}},
      {{"--sync", "auto", "--memory-budget", "1GiB", "--host-work", "match"}, {"host-work match", "sync auto", "single run"}},
  };
  for (const auto& [args, want] : cases) {
    std::string a;
    for (const std::string& w : args) a += w + " ";
    SCOPED_TRACE(a);
    EXPECT_EQ(names(study_entries_for(parsed(args))), want);
    EXPECT_EQ(studies_for(parsed(args)).size(), want.size());
  }
}

}  // namespace
}  // namespace amlp::train
