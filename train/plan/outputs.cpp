// outputs.cpp — the files a run will write (outputs.h).
#include "train/plan/outputs.h"

#include <cstdio>

#include "framework/parse.h"

namespace amlp::train {

std::string tagged_path(const std::string& path, const std::string& tag) {
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == slash + 1)
    return path + "." + tag;
  return path.substr(0, dot) + "." + tag + path.substr(dot);
}

std::string fraction_tag(double f) {
  char t[32];
  std::snprintf(t, sizeof t, "h%gd", f);
  return t;
}

std::vector<OutputFile> output_files(const Options& o, const std::vector<std::string>& memory_logs) {
  std::vector<OutputFile> files;
  for (const std::string& log : memory_logs) files.push_back({"memory-log", log, OutputWay::Records});
  if (!o.trace.empty()) files.push_back({"trace", o.trace, OutputWay::Whole});
  if (!o.summary_json.empty()) files.push_back({"summary-json", o.summary_json, OutputWay::Whole});
  if (!o.save.empty()) files.push_back({"save", o.save, OutputWay::Whole});  // nn/checkpoint.h: through write_file
  return files;
}

namespace {

// Two outputs on one file (by device and inode where it exists, else by the
// path with its directories' links resolved: "./x", "x" and "d/../x" alike),
// or an output on an input (the config file; --data and --targets, which
// the run reads while it writes; the --load file, which only --save may
// replace: it is read before anything runs and written at the end, so a run
// can carry its parameters on in one file): one line naming
// them, else "". A FIFO or a device is written in place, never replaced, so
// outputs may share one.
std::string clash_problem(const Options& o, const std::vector<OutputFile>& files) {
  const std::string config = o.config.empty() ? "" : file_identity(o.config);
  const std::string load = o.load.empty() ? "" : file_identity(o.load);
  const std::string data = o.data.empty() ? "" : file_identity(o.data);
  const std::string targets = o.targets.empty() ? "" : file_identity(o.targets);
  const auto spelled_as = [](const std::string& path, const std::string& input, const char* option) {
    return path == input ? std::string() : " (--" + std::string(option) + " '" + shown_path(input) + "')";
  };
  std::vector<std::string> ids;
  for (const OutputFile& f : files) {
    const std::string id = file_identity(f.path);
    const std::string shown = "'" + shown_path(f.path) + "'";
    if (!id.empty() && id == config)
      return "--" + f.option + " would overwrite the config file " + shown + spelled_as(f.path, o.config, "config") +
             ": give the output a file of its own";
    if (!id.empty() && (id == data || id == targets)) {
      const bool x = id == data;
      return "--" + f.option + " would overwrite the " + (x ? "data" : "targets") + " file " + shown +
             spelled_as(f.path, x ? o.data : o.targets, x ? "data" : "targets") + ": give the output a file of its own";
    }
    if (!id.empty() && id == load && f.option != "save")
      return "--" + f.option + " would overwrite the parameters file " + shown + spelled_as(f.path, o.load, "load") +
             ": give the output a file of its own";
    for (size_t j = 0; j < ids.size(); ++j) {
      if (id.empty() || ids[j] != id) continue;
      const OutputFile& g = files[j];
      const std::string spelled = g.path == f.path ? "" : " (as '" + shown_path(g.path) + "')";
      if (g.option == f.option)  // a comparison's runs, each with its tagged log
        return "--" + f.option + ": two runs would write one file, " + shown + spelled +
               ", each over the other: give them values that tell them apart (--compare-every, --sweep-fractions)";
      return "--" + g.option + " and --" + f.option + " name one file, " + shown + spelled +
             ": each would overwrite the other; give each its own";
    }
    ids.push_back(id);
  }
  return "";
}

}  // namespace

std::string outputs_problem(const Options& o, const std::vector<std::string>& memory_logs) {
  const std::vector<OutputFile> files = output_files(o, memory_logs);
  for (const OutputFile& f : files)
    if (std::string why = output_problem(f.path, f.way); !why.empty())
      return "--" + f.option + ": cannot write '" + shown_path(f.path) + "': " + why;
  return clash_problem(o, files);
}

}  // namespace amlp::train
