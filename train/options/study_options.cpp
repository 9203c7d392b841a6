// study_options.cpp — the registry of the studies' options (study_options.h).
#include "train/options/study_options.h"

#include <algorithm>

namespace amlp::train {

namespace {
// A function-local static: filled by the studies' static RegisterStudyOptions
// objects, whatever order their files' initialisers run in.
std::vector<StudyOptionsEntry>& registry() {
  static std::vector<StudyOptionsEntry> r;
  return r;
}
}  // namespace

RegisterStudyOptions::RegisterStudyOptions(const StudyOptionsEntry& e) {
  auto& r = registry();
  r.insert(std::upper_bound(r.begin(), r.end(), e,
                            [](const StudyOptionsEntry& a, const StudyOptionsEntry& b) { return a.order < b.order; }),
           e);
}

const std::vector<StudyOptionsEntry>& study_options_entries() { return registry(); }

}  // namespace amlp::train
