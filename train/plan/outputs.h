// outputs.h — the files a run of train_mlp will write (memory logs, trace,
// summary), known from the options and the plan before anything runs (the
// memory logs are the plan's: train/studies/study.h planned_memory_logs): whether
// each can be written, opened as it will be opened (framework/write_file.h
// output_problem), and that no two of them are one file, nor one of them and
// an input (the config file, --data and --targets, the --load file but for
// --save).
//
//   if (std::string why = outputs_problem(options, planned_memory_logs(options)); !why.empty()) refuse(why);  // exit 2
#pragma once
#include <string>
#include <vector>

#include "framework/write_file.h"
#include "train/options/options.h"

namespace amlp::train {

// The memory-log path of one run of a comparison: "out/mem.csv" + "none" → "out/mem.none.csv".
std::string tagged_path(const std::string& path, const std::string& tag);

// A sweep fraction's tag in its runs' file names: 0.5 → "h0.5d" (train/studies/sweep.h).
std::string fraction_tag(double f);

// Every file the options will write: `memory_logs`, the plan's (one per run
// of a comparison), and the options' own.
struct OutputFile {
  std::string option;  // "memory-log"
  std::string path;
  OutputWay way;       // a memory log record by record, the trace and the summary whole
};
std::vector<OutputFile> output_files(const Options& o, const std::vector<std::string>& memory_logs);

// "" when every output the options name can be written and each is a file of
// its own, else one line naming the first problem and its option: "--trace:
// cannot write 'x': ...", "--memory-log and --summary-json name one file,
// 'x': ...", "--summary-json would overwrite the config file 'x.ini' ...",
// "--trace would overwrite the parameters file 'm.safetensors' ...".
// Paths are shown with framework/parse.h shown_path. train_mlp refuses the
// run with it (status 2) before anything runs; nothing is left created.
std::string outputs_problem(const Options& o, const std::vector<std::string>& memory_logs);

}  // namespace amlp::train
