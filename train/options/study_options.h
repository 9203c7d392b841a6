// study_options.h — the options of train_mlp's studies (train/studies/), each
// study's declared, read and checked in that study's own file. The option
// table (option_table.cpp, which keeps their registry) takes them in after one
// run's options; Options keeps the settings of each study the options ask for
// under the study's name (study_settings.h), and only that study's file knows
// their type.
//
//   // train/studies/sweep.cpp
//   const RegisterStudyOptions sweep_options{{"sweep", 40,
//       [](Declare& d) { d.flag("sweep", "...").option<std::vector<double>>("sweep-fractions", ...); },
//       [](const po::variables_map& vm) -> std::any {
//         if (!vm["sweep"].as<bool>()) return {};  // not asked for: no settings
//         return SweepSettings{vm["sweep-fractions"].as<std::vector<double>>(), ...};
//       },
//       [](const Options& o) -> std::string { return o.studies.asked<PoliciesSettings>() ? "..." : ""; }}};
//
//   if (const SweepSettings* s = o.studies.find<SweepSettings>()) ...
#pragma once
#include <any>
#include <string>
#include <vector>

#include "train/options/program_options.h"
#include "train/options/study_settings.h"

namespace amlp::train {

struct Options;

// One study's options, registered by a static RegisterStudyOptions in its file.
struct StudyOptionsEntry {
  const char* study = "";  // the name its settings are kept under: "sweep"
  int order = 0;           // its place in --help and among the checks, lowest first
  void (*declare)(Declare& d) = nullptr;
  // Its settings from the parsed values; an empty std::any when the options do not ask for it.
  std::any (*read)(const po::variables_map& vm) = nullptr;
  // "" when its settings combine with the rest of the options (every value
  // parsed, every study read), else why not: one line, exit 2.
  std::string (*problem)(const Options& o) = nullptr;
  // Its paragraph in --help after the option tables (help_after_models), or nullptr.
  const char* help = nullptr;
};
struct RegisterStudyOptions {
  explicit RegisterStudyOptions(const StudyOptionsEntry& e);
};
// Every registered study's options entry, by order.
const std::vector<StudyOptionsEntry>& study_options_entries();

}  // namespace amlp::train
