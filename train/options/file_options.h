// file_options.h — every option of train_mlp that names a file, described
// once: which way the data goes, what the path may be, how much is read, and
// how it is read or written. `train_mlp --help` prints this table; the readers
// and writers take their limits from it (the config's cap and wait, --load's
// wait); tests/train/plan/test_file_options.cpp checks that every option whose
// value is a file is here and runs each against every hostile form of path.
//
//   for (const FileOption& f : file_options()) ...   // "config", "data", ...
//   file_option("config").max_bytes                   // 16 MiB
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace amlp::train {

enum class FileRole { Input, Output };

struct FileOption {
  const char* option;   // the long name: "data"
  FileRole role;
  bool may_be_pipe;     // a FIFO or pipe is taken (inputs: read as the writer writes; outputs: written in place)
  size_t max_bytes;     // inputs read whole: the most read before refusing (0: not read whole)
  int wait_s;           // inputs read whole from a FIFO or pipe: the silence that ends the wait
  const char* takes;    // what the path may be, in words
  const char* how;      // how it is read or written, in words
};

// Every file option, in --help's order of the table.
const std::vector<FileOption>& file_options();
// The entry of `option` ("config"); throws std::logic_error for another name.
const FileOption& file_option(const std::string& option);
// The table as --help prints it.
std::string file_options_help();

}  // namespace amlp::train
