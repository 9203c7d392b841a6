// outputs.h — the files a run of train_mlp will write (memory logs, trace,
// summary), known from the options and the plan before anything runs, and
// whether each can be written.
//
//   for (const OutputFile& f : output_files(options))
//     if (std::string why = output_path_problem(f.path); !why.empty()) refuse(f.option, why);
#pragma once
#include <string>
#include <vector>

#include "train/options/options.h"

namespace amlp::train {

// The memory-log path of one run of a comparison: "out/mem.csv" + "none" → "out/mem.none.csv".
std::string tagged_path(const std::string& path, const std::string& tag);

// A sweep fraction's tag in its runs' file names: 0.5 → "h0.5d" (train/studies/sweep.h).
std::string fraction_tag(double f);

// Every file the options will write (one memory log per run of a comparison).
struct OutputFile {
  std::string option;  // "memory-log"
  std::string path;
};
std::vector<OutputFile> output_files(const Options& o);

// "" when `path` can be created or overwritten, else why not (nothing is created).
std::string output_path_problem(const std::string& path);

// "" when every output the options name can be written, else one line
// naming the first that cannot ("--trace: cannot write 'x': ..."); train_mlp
// refuses the run with it (status 2) before anything runs.
std::string outputs_problem(const Options& o);

}  // namespace amlp::train
