// option_table.h — train_mlp's options, each declared once: its key, the
// name of its value, its default as text, the parser that reads it
// (option_values.h) and its help. --help prints these tables, the config
// file's keys are the training options', and to_options() reads a run's
// Options from the values Boost stored.
//
//   po::options_description general = general_options();   // also the INI keys
//   po::options_description cmdline(kHelpWidth, kHelpWidth / 2);
//   cmdline.add(command_line_only()).add(general);          // --help's tables
//   ... po::store(...), po::notify(vm) ...
//   Options o = to_options(vm);
//   std::string doc = options_markdown();   // docs/cli.md's tables, as they must read
#pragma once
#include <string>

#include "train/options/options.h"
#include "train/options/program_options.h"

namespace amlp::train {

// --help's line width, and the column its descriptions start at (half of it).
constexpr unsigned kHelpWidth = 100;

// "Training options (also INI keys)": one run's (the devices, the mode, the
// batches and the model; how its work is queued and held; its files; its
// live status), then each study's (study_options.h), in their order.
po::options_description general_options();
// "Command line only": --help, --version, --config.
po::options_description command_line_only();
// Hidden: the words that are not options, which parse_options refuses.
po::options_description stray_arguments();

// docs/cli.md's tables of the options, as the page must read: each table's
// caption as --help writes it, then the table (program_options.h's
// markdown_table); tests/train/options/test_train_options.cpp checks the page
// against it and prints it to paste when they differ.
std::string options_markdown();

// The values, already parsed and checked when they were stored, as Options
// (the studies' settings under their names; `settings` is left empty).
Options to_options(const po::variables_map& vm);

}  // namespace amlp::train
