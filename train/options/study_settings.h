// study_settings.h — the settings of the studies a run's options ask for
// (--compare, --sweep, --sync auto, ...), each kept under its study's name
// and read only by that study's file (train/studies/; their options:
// study_options.h). A settings type names its study once (kStudy), and is
// found by its type.
//
//   struct SweepSettings { static constexpr const char* kStudy = "sweep"; ... };
//   const SweepSettings* s = o.studies.find<SweepSettings>();  // nullptr: --sweep not given
//   o.studies.asked<PoliciesSettings>()                         // --compare-policies given
#pragma once
#include <any>
#include <map>
#include <string>
#include <utility>

namespace amlp::train {

// The settings of the studies asked for, each under its study's name.
class StudySettings {
 public:
  // Whether the study whose settings are a `T` was asked for.
  template <class T>
  bool asked() const {
    return by_study_.count(T::kStudy) != 0;
  }
  // Its settings, or nullptr when it was not asked for.
  template <class T>
  const T* find() const {
    const auto it = by_study_.find(T::kStudy);
    return it == by_study_.end() ? nullptr : std::any_cast<T>(&it->second);
  }
  // The registry's (study_options.h): the settings a study's entry read, under its name.
  void set(const std::string& study, std::any settings) { by_study_[study] = std::move(settings); }

 private:
  std::map<std::string, std::any> by_study_;
};

}  // namespace amlp::train
