// file_options.cpp — the table of train_mlp's files (file_options.h).
#include "train/options/file_options.h"

#include <stdexcept>

namespace amlp::train {

const std::vector<FileOption>& file_options() {
  static const std::vector<FileOption> table = {
      {"config", FileRole::Input, true, size_t(16) << 20, 5,
       "a regular file, a FIFO or pipe (--config <(...)), a device",
       "read once, whole, before anything runs; over 16 MiB, or 5 s without a byte from a FIFO, is an error"},
      {"data", FileRole::Input, false, 0, 0, "a regular file",
       "its header checked before anything runs; its rows read with pread as batches need them (never mapped, "
       "so a file cut short during the run is an error, not SIGBUS), each value checked finite; before each "
       "batch, its size, modification time and status-change time checked against the file the run opened "
       "(cut short, grown or rewritten, also with its modification time set back: an error)"},
      {"targets", FileRole::Input, false, 0, 0, "a regular file", "as --data"},
      {"load", FileRole::Input, true, 0, 5, "a regular file, a FIFO or pipe (--load <(...), /dev/stdin)",
       "read once, before anything runs (the header's length read first: at most 100 MiB of header and the "
       "data it describes); checked against the model, each value finite; 5 s without a byte from a FIFO is an error"},
      {"memory-log", FileRole::Output, true, 0, 0,
       "a new or regular file (created or truncated), a FIFO whose reader is open, a device",
       "one row per batch, each flushed; a failed write cuts the file back to its last whole row; locked "
       "(flock) while written, so a second run on it is refused before anything runs, naming the first's pid"},
      {"trace", FileRole::Output, true, 0, 0, "a new or regular file, a FIFO whose reader is open, a device",
       "written whole when the run ends: a temporary renamed over a regular file, in place otherwise"},
      {"summary-json", FileRole::Output, true, 0, 0, "as --trace", "as --trace"},
      {"save", FileRole::Output, true, 0, 0, "as --trace", "as --trace, when training ends (also when interrupted)"},
  };
  return table;
}

const FileOption& file_option(const std::string& option) {
  for (const FileOption& f : file_options())
    if (option == f.option) return f;
  throw std::logic_error("no file option --" + option);
}

std::string file_options_help() {
  std::string t =
      "Files: each option that names one. Every path is checked before anything runs (an empty path, a\n"
      "directory, a link to nothing, a loop of links, an unreadable input, two outputs on one file: one line,\n"
      "exit 2); what fails during the run is one line naming the option, exit 1. SIGPIPE and SIGXFSZ are\n"
      "ignored: a closed pipe or a file past `ulimit -f` is a failed write.\n";
  for (const FileOption& f : file_options())
    t += std::string("  --") + f.option + (f.role == FileRole::Input ? " (input): " : " (output): ") + f.takes +
         "; " + f.how + ".\n";
  t += "  stdout, stderr (output): anything; every write checked.\n";
  return t;
}

}  // namespace amlp::train
