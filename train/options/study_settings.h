// study_settings.h — the settings of the studies a run's options ask for
// (--compare, --sweep, --sync auto, ...), each kept under its study's name
// and read only by that study's file (train/studies/; their options:
// study_options.h).
//
//   o.studies.asked("compare")                                    // --compare given
//   const SweepSettings* s = o.studies.find<SweepSettings>("sweep");   // nullptr: not asked for
#pragma once
#include <any>
#include <map>
#include <string>
#include <utility>

namespace amlp::train {

// The settings of the studies asked for, each under its study's name.
class StudySettings {
 public:
  bool asked(const std::string& study) const { return by_study_.count(study) != 0; }
  // The study's settings, or nullptr when it was not asked for (or `T` is not their type).
  template <class T>
  const T* find(const std::string& study) const {
    const auto it = by_study_.find(study);
    return it == by_study_.end() ? nullptr : std::any_cast<T>(&it->second);
  }
  void set(const std::string& study, std::any settings) { by_study_[study] = std::move(settings); }

 private:
  std::map<std::string, std::any> by_study_;
};

}  // namespace amlp::train
