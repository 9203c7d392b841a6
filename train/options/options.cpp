// options.cpp — reading train_mlp's options (options.h): the command line, then the
// config file, each value read as it is stored, then --data's files and the
// checks across the options.
#include "train/options/options.h"

#include <optional>
#include <string>
#include <vector>

#include "framework/parse.h"
#include "train/options/config_file.h"
#include "train/options/file_options.h"
#include "train/options/help_text.h"
#include "train/options/option_table.h"
#include "train/options/program_options.h"

namespace amlp::train {

std::vector<Device> run_devices(const Options& s) {
  return s.devices.empty() ? std::vector<Device>{s.device} : s.devices;
}

ParseOutcome parse_options(const std::vector<std::string>& args) {
  ParseOutcome out;
  const auto fail = [&](const std::string& msg) {
    out.status = ParseStatus::Error;
    out.exit_code = kExitBadInput;
    out.message = msg;
    return out;
  };
  po::options_description general = general_options();
  po::options_description cmdline(kHelpWidth, kHelpWidth / 2);
  cmdline.add(command_line_only()).add(general);
  po::options_description accepted;
  accepted.add(cmdline).add(stray_arguments());
  po::positional_options_description stray;
  stray.add("stray-argument", -1);
  po::parsed_options parsed(&accepted);
  try {
    const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    parsed = po::command_line_parser(args).options(accepted).style(style).positional(stray).run();
  } catch (const po::error& e) {
    return fail(option_error(e, ""));
  }
  // --help and --version win over any value: they are answered before a value is read.
  for (const po::option& opt : parsed.options) {
    if (opt.string_key == "help") {
      out.status = ParseStatus::Exit;
      out.help = true;
      out.message = help_text(cmdline);
      return out;
    }
  }
  for (const po::option& opt : parsed.options) {
    if (opt.string_key == "version") {
      out.status = ParseStatus::Exit;
      out.message = version_text();
      return out;
    }
  }
  po::variables_map vm;
  try {
    po::store(parsed, vm);
  } catch (const BadValue& e) {
    return fail("--" + e.key + e.problem);
  } catch (const po::error& e) {
    return fail(option_error(e, ""));
  }
  if (vm.count("stray-argument"))
    return fail("unexpected argument " + quote(vm["stray-argument"].as<std::vector<std::string>>()[0]) +
                " (options start with --; see --help)");
  std::optional<po::parsed_options> from_file;  // the config file's values, where there is one
  const std::string config = vm["config"].as<std::string>();
  if (config.empty() && !vm["config"].defaulted()) return fail("--config must name a file (got '')");
  if (!config.empty())
    if (const std::string why = read_config_file(config, general, vm, &from_file); !why.empty()) return fail(why);
  // A file option given an empty path (`--save ''`, `save =` in the config) is
  // refused as --config's is, not taken for the option left out.
  for (const FileOption& f : file_options())
    if (vm.count(f.option) && !vm[f.option].defaulted() && vm[f.option].as<std::string>().empty())
      return fail(std::string("--") + f.option + " must name a file (got '')");
  try {
    po::notify(vm);
    out.options = to_options(vm);
    std::vector<const po::parsed_options*> sources{&parsed};  // the command line wins
    if (from_file) sources.push_back(&*from_file);
    out.options.settings = settings_text(general, sources, vm);
  } catch (const po::error& e) {
    return fail(option_error(e, ""));
  }
  if (const std::string why = data_problem(out.options, !vm["features"].defaulted(), !vm["batches"].defaulted());
      !why.empty())
    return fail(why);
  if (const std::string why = options_problem(out.options); !why.empty()) return fail(why);
  return out;
}

ParseOutcome parse_options(int argc, const char* const argv[]) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return parse_options(args);
}

}  // namespace amlp::train
