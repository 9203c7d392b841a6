// config_file.cpp — reading --config's INI file (config_file.h).
#include "train/options/config_file.h"

#include <set>
#include <sstream>

#include "framework/parse.h"
#include "framework/read_input.h"
#include "train/options/file_options.h"

namespace amlp::train {

namespace {

// The whole text of `path`; false and why not ("it is a directory", the
// system's reason) when it cannot be read (framework/read_input.h).
bool read_config_text(const std::string& path, std::string* text, std::string* why) {
  const FileOption& f = file_option("config");  // its cap and its wait: the table of files
  return read_input(path, f.max_bytes, f.wait_s, "an INI file of options", text, why);
}

// "" when `text` can be an INI file as Boost reads it (UTF-8, lines ending in
// \n or \r\n), else why not, named as the user would fix it: UTF-32 or UTF-16
// (a byte-order mark, or NUL bytes) or lines ended by a carriage return alone.
std::string config_text_problem(const std::string& text) {
  if (text.rfind(std::string("\xFF\xFE\0\0", 4), 0) == 0 || text.rfind(std::string("\0\0\xFE\xFF", 4), 0) == 0)
    return "it is UTF-32 (it begins with a UTF-32 byte-order mark): save it as UTF-8";
  if (text.rfind("\xFF\xFE", 0) == 0 || text.rfind("\xFE\xFF", 0) == 0)
    return "it is UTF-16 (it begins with a UTF-16 byte-order mark): save it as UTF-8";
  if (text.find('\0') != std::string::npos)
    return "it holds NUL bytes, which no INI text does (UTF-16 or UTF-32 without a byte-order mark?): save it as UTF-8";
  if (text.find('\r') != std::string::npos && text.find('\n') == std::string::npos)
    return "its lines end in a carriage return alone (classic Mac OS line endings): save it with \\n line endings";
  return "";
}

// The INI text as Boost's reader takes it: a UTF-8 byte-order mark at the
// start dropped, and a line whose first non-blank character is ';' (a comment,
// as '#' is to Boost) made blank. Any other line is left to Boost.
std::string ini_for_boost(std::string text) {
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const size_t first = text.find_first_not_of(" \t", start);
    if (first < end && text[first] == ';') {
      text.erase(first, end - first);
      end = first;
    }
    start = end + 1;
  }
  return text;
}

}  // namespace

std::string read_config_file(const std::string& config, const po::options_description& general, po::variables_map& vm,
                             std::optional<po::parsed_options>* from_file) {
  const std::string shown = shown_path(config);
  std::string text, why;
  if (!read_config_text(config, &text, &why)) return "cannot read config file '" + shown + "': " + why;
  if (const std::string bad = config_text_problem(text); !bad.empty()) return "config file '" + shown + "': " + bad;
  std::istringstream in(ini_for_boost(std::move(text)));
  try {
    *from_file = po::parse_config_file(in, general, /*allow_unregistered=*/false);
    // Checked here, not by store(): store() skips keys the command line set.
    std::set<std::string> seen;
    for (const po::option& opt : (*from_file)->options)
      if (!seen.insert(opt.string_key).second) return shown + ": key '" + opt.string_key + "' is given more than once";
    // Every value the file gives is read, also where the command line sets
    // the key: a bad file is bad input whatever overrides it.
    po::variables_map file_values;
    po::store(**from_file, file_values);
    po::store(**from_file, vm);  // keys the command line set are not read: the command line wins
  } catch (const BadValue& e) {
    return "'" + e.key + "' in " + shown + e.problem;
  } catch (const po::error& e) {
    return option_error(e, shown);
  }
  return "";
}

}  // namespace amlp::train
