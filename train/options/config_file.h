// config_file.h — --config FILE: an INI file of options, its keys the long
// option names, its values read by the same parsers as the command line's.
// Read whole before it is parsed, so that what kind of file it is cannot stop
// the run: a FIFO or a pipe (--config <(printf 'batches=2\n')) is read as its
// writer writes; one that stays silent for its wait (a FIFO no process
// writes to, a terminal) is an error instead of a hang; a file past its cap
// (/dev/zero) is not an INI file of options (file_options.h).
//
//   std::optional<po::parsed_options> from_file;
//   if (std::string why = read_config_file(path, general_options(), vm, &from_file); !why.empty()) fail(why);
#pragma once
#include <optional>
#include <string>

#include "train/options/program_options.h"

namespace amlp::train {

// --config FILE's values into `vm` (where the command line did not set the
// key; the file's parse in `from_file`), each read by its option of
// `general`: "" or what is wrong, one line (an unreadable file, UTF-16, a
// key given twice, an unknown key, a bad value, naming the file).
std::string read_config_file(const std::string& config, const po::options_description& general, po::variables_map& vm,
                             std::optional<po::parsed_options>* from_file);

}  // namespace amlp::train
