#include "train/options/program_options.h"

namespace amlp::train {

namespace {

// Boost's own messages quote what was typed as it was typed; an error stays
// one line, and a short one: a quoted value past 64 characters is cut (a
// 5000-character config value would otherwise be echoed whole).
std::string one_line(std::string text) {
  constexpr size_t kMaxQuoted = 64;
  for (size_t open = text.find('\''); open != std::string::npos;) {
    const size_t close = text.find('\'', open + 1);
    if (close == std::string::npos) break;
    if (close - open - 1 > kMaxQuoted) {
      text.replace(open + 1 + kMaxQuoted, close - open - 1 - kMaxQuoted, "...");
      open = text.find('\'', open + 1 + kMaxQuoted + 3 + 1);
    } else {
      open = text.find('\'', close + 1);
    }
  }
  for (size_t i = 0; i < text.size(); ++i)
    if (static_cast<unsigned char>(text[i]) < 0x20) {
      const std::string q = quote(text.substr(i, 1));  // "'\\n'"
      text.replace(i, 1, q.substr(1, q.size() - 2));
    }
  return text;
}

// `text` in a Markdown table's cell as it reads in --help: '|' escaped (in
// `code` too, as GitHub's tables take it), and '<' outside `code`, which
// would otherwise open an HTML tag ("cuda:<rank on the host>").
std::string markdown_cell(const std::string& text) {
  std::string cell;
  bool in_code = false;
  for (char c : text) {
    if (c == '`') in_code = !in_code;
    if (c == '|' || (c == '<' && !in_code)) cell += '\\';
    cell += c;
  }
  return cell;
}

}  // namespace

std::string option_error(const po::error& e, const std::string& where) {
  if (auto* u = dynamic_cast<const po::unknown_option*>(&e)) {
    if (where.empty()) return "unknown option " + quote(u->get_option_name()) + " (see --help)";
    return where + ": unknown key " + quote(u->get_option_name()) + " (keys are the long option names; see --help)";
  }
  if (auto* m = dynamic_cast<const po::invalid_command_line_syntax*>(&e)) {
    if (m->kind() == po::invalid_syntax::missing_parameter)
      return "option " + quote(m->get_option_name()) + " needs a value";
  }
  if (auto* m = dynamic_cast<const po::multiple_occurrences*>(&e))
    return (where.empty() ? "" : where + ": ") + "option " + quote(m->get_option_name()) + " given more than once";
  return one_line(where.empty() ? e.what() : where + ": " + e.what());
}

std::string settings_text(const po::options_description& table, const std::vector<const po::parsed_options*>& sources,
                          const po::variables_map& vm) {
  std::string text;
  for (const auto& option : table.options()) {
    const std::string& key = option->long_name();
    const po::value_semantic* kind = option->semantic().get();
    std::string value;
    if (dynamic_cast<const po::typed_value<bool>*>(kind)) {  // a flag: "--compare" and "compare = true" alike
      value = vm.count(key) && vm[key].as<bool>() ? "on" : "off";
    } else {
      bool given = false;
      for (const po::parsed_options* from : sources) {
        for (const po::option& o : from->options)
          if (o.string_key == key) {  // the last of a source's (a repeat is refused before)
            value.clear();
            for (const std::string& t : o.value) value += (value.empty() ? "" : " ") + t;
            given = true;
          }
        if (given) break;
      }
      if (!given) {
        if (const auto* d = dynamic_cast<const DeclaredValue*>(kind))
          value = d->default_text();
        else if (vm.count(key) && vm[key].value().type() == typeid(std::string))
          value = vm[key].as<std::string>();
      }
    }
    text += key + "=" + value + "\n";
  }
  return text;
}

std::string markdown_table(const po::options_description& table) {
  std::string t = "| option (default) | meaning |\n|---|---|\n";
  for (const auto& option : table.options()) {
    // "-h" where the option has a short name, else its long name without dashes.
    const std::string shorter = option->canonical_display_name(po::command_line_style::allow_dash_for_short);
    std::string name = "--" + option->long_name(), given = "";
    const po::value_semantic* kind = option->semantic().get();
    if (const auto* d = dynamic_cast<const DeclaredValue*>(kind)) {
      name += " " + d->value_name();
      if (!d->default_text().empty()) given = " (`" + d->default_text() + "`)";
    } else if (kind->max_tokens() != 0) {
      name += " " + option->format_parameter();
    }
    const std::string cell = (shorter.rfind('-', 0) == 0 ? "`" + shorter + "`, " : "") + "`" + name + "`" + given;
    t += "| " + markdown_cell(cell) + " | " + markdown_cell(option->description()) + " |\n";
  }
  return t;
}

}  // namespace amlp::train
