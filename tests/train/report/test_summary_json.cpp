// test_summary_json.cpp — the summary JSON (train/report/summary_json.cpp) keeps the
// key structure scripts read: for each study (a plain run, --compare,
// --compare-policies, --sweep, --sync auto, --host-work match, --epochs) a fresh run's
// keys, in order, and its runs' labels equal those captured from the base
// commit's train_mlp in tests/train/data/summary_keys.json. Values are not
// compared (they are measurements); an object's keys and their order are, an
// array of objects by the union of its elements' keys.
#include <gtest/gtest.h>

#include "framework/json.h"
#include <set>
#include <string>
#include <vector>

#include "train/report/run_figures.h"
#include "train/train_test_util.h"

namespace amlp::testing {
namespace {

using Json = amlp::Json;

// The key structure of `v`: an object maps each key (in order) to its value's
// structure; an array of objects is [the union of its elements' structures,
// first appearance first]; an array of arrays is [its first element's]; any
// other array is []; a scalar is null.
Json structure(const Json& v) {
  if (v.is_object()) {
    Json s = Json::object();
    for (const auto& [k, x] : v.items()) s[k] = structure(x);
    return s;
  }
  if (!v.is_array() || v.empty()) return v.is_array() ? Json::array() : Json();
  bool all_objects = true;
  for (const Json& e : v) all_objects = all_objects && e.is_object();
  if (all_objects) {
    Json merged = Json::object();
    for (const Json& e : v)
      for (const auto& [k, x] : e.items())
        if (!merged.contains(k)) merged[k] = structure(x);
    return Json::array({merged});
  }
  return v[0].is_structured() ? Json::array({structure(v[0])}) : Json::array();
}

Json fixture() { return Json::parse(read_file(source_file("tests/train/data/summary_keys.json"))); }

// The cases are the fixture's studies, read as the tests register: a fixture
// that cannot be read (no source tree above a build folder elsewhere, say)
// is one case that fails saying why, not an abort of the whole executable.
std::vector<std::string> cases() {
  std::vector<std::string> names;
  try {
    const Json f = fixture();
    for (const auto& [k, x] : f.items())
      if (k.front() != '_') names.push_back(k);
  } catch (const std::exception&) {
    return {"TheFixtureCannotBeRead"};  // its test reads it again and fails with the reason
  }
  return names;
}

class SummaryJsonKeys : public ::testing::TestWithParam<std::string> {};

TEST_P(SummaryJsonKeys, MatchTheBaseCommit) {
  const Json want = fixture().at(GetParam());
  ScratchDir dir;
  // quick.ini's runs at a sixteenth of its shape: the keys do not depend on it.
  const Ran r = run_train_mlp("--config " + source_file("configs/quick.ini") + " --device cpu --quiet " +
                              "--batch-size 64 --features 128 --hidden 128,32 " + want.at("args").get<std::string>() +
                              " --summary-json " + dir.file("s.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  const Json got = Json::parse(read_file(dir.file("s.json")));
  EXPECT_EQ(structure(got).dump(1), want.at("keys").dump(1));
  std::vector<std::string> labels;
  for (const Json& run : got.is_object() ? got.at("runs") : got) labels.push_back(run.at("label").get<std::string>());
  EXPECT_EQ(Json(labels), want.at("labels"));
}

INSTANTIATE_TEST_SUITE_P(Studies, SummaryJsonKeys, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// Every key a study's summary has, at any depth, into `keys`.
void collect_keys(const Json& v, std::set<std::string>& keys) {
  if (v.is_object())
    for (const auto& [k, x] : v.items()) {
      keys.insert(k);
      collect_keys(x, keys);
    }
  else if (v.is_array())
    for (const Json& e : v) collect_keys(e, keys);
}

// docs/cli.md says what each key of the summary holds: every key of every
// study above is named there (`key`, or "key" for the top-level objects), so
// a key added to the summary and the fixture without a word fails here.
TEST(SummaryJsonKeys, EveryKeyIsDescribedInCliMd) {
  const std::string doc = read_file(source_file("docs/cli.md"));
  const Json f = fixture();
  std::set<std::string> keys;
  for (const auto& [k, x] : f.items())
    if (k.front() != '_') collect_keys(x.at("keys"), keys);
  EXPECT_GT(keys.size(), 90u);
  for (const std::string& k : keys)
    EXPECT_TRUE(doc.find("`" + k + "`") != std::string::npos || doc.find("`\"" + k + "\"`") != std::string::npos)
        << "docs/cli.md does not name the summary key '" << k << "'";
}

// The structure itself: keys in order, arrays of objects merged, values dropped.
TEST(SummaryJsonStructure, KeepsKeyOrderAndMergesArrays) {
  const Json v = Json::parse(R"({"b": 1, "a": [{"x": 1}, {"y": "s", "x": 2}], "c": [1, 2], "d": [[{"z": 0}]]})");
  EXPECT_EQ(structure(v).dump(), R"({"b":null,"a":[{"x":null,"y":null}],"c":[],"d":[[{"z":null}]]})");
  EXPECT_NE(structure(Json::parse(R"({"a": 1, "b": 2})")).dump(), structure(Json::parse(R"({"b": 2, "a": 1})")).dump());
}

// docs/cli.md's table of a run's keys is the one run_figures.cpp declares,
// row for row (key, unit, meaning), so the page cannot drift from the code.
TEST(RunFigures, CliMdsTableIsTheDeclaredOne) {
  EXPECT_TRUE(page_section_is("docs/cli.md", "<!-- run figures: train/report/run_figures.cpp -->\n",
                              "<!-- /run figures -->", train::figures_markdown(), "train/report/run_figures.cpp"));
}

// The fixture's runs (every study's, captured from train_mlp) have the
// declared keys in the declared order, each figure whose `when` holds for
// that study (--epochs' "epochs"), and their devices', ranks', graph's and
// epochs' objects likewise.
std::vector<std::string> keys_of(const Json& structure) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : structure.items()) keys.push_back(k);
  return keys;
}
template <typename R>
std::vector<std::string> declared(const std::vector<train::Figure<R>>& figures) {
  std::vector<std::string> keys;
  for (const auto& f : figures) keys.push_back(f.key);
  return keys;
}

TEST(RunFigures, TheFixturesRunsHaveTheDeclaredKeysInOrder) {
  const Json f = fixture();
  size_t studies = 0;
  for (const auto& [study, x] : f.items()) {
    if (study.front() == '_') continue;
    SCOPED_TRACE(study);
    ++studies;
    const Json& keys = x.at("keys");
    const Json& run = (keys.is_object() ? keys.at("runs") : keys).at(0);
    std::vector<std::string> want;
    for (const train::RunFigure& fig : train::run_figures())
      if (!fig.when || run.contains(fig.key)) want.push_back(fig.key);
    EXPECT_EQ(keys_of(run), want);
    const bool with_epochs = study == "epochs";
    EXPECT_EQ(run.contains("epochs"), with_epochs);
    if (with_epochs) EXPECT_EQ(keys_of(run.at("epochs").at("each").at(0)), declared(train::epoch_figures()));
    if (!run.at("devices").empty()) EXPECT_EQ(keys_of(run.at("devices").at(0)), declared(train::device_figures()));
  }
  EXPECT_EQ(studies, 7u);
}

}  // namespace
}  // namespace amlp::testing
