// program_options.h — Boost.Program_options, made to read each value with
// the framework/parse.h parser it is declared with, and its errors turned
// into one short line. Nothing here knows train_mlp's options.
//
//   po::options_description d("Training options", 100, 50);
//   Declare(d).option<int>("batches", "N", "100", int_parser, "minibatches to train")
//             .flag("blocking", "synchronous mode").text("trace", "FILE.json", "", "...");
//   try { po::store(parsed, vm); } catch (const BadValue& e) { ... "--" + e.key + e.problem ... }
//   catch (const po::error& e) { ... option_error(e, "") ... }
#pragma once
#include <boost/program_options.hpp>
#include <functional>
#include <string>
#include <vector>

#include "framework/error.h"
#include "framework/parse.h"

namespace amlp::train {

namespace po = boost::program_options;

// --- typed options -------------------------------------------------------------------
//
// Each option is declared once, with its type and the framework/parse.h parser
// that reads and range-checks it. Boost calls the parser when it stores the
// value, from the command line or from the config file, so a bad value is
// caught there and named by its option key.

// A value an option's parser rejected. `problem` follows the option's name:
// " must be an integer in [1, 100000000] (got 0)" or ": unknown device 'tpu' (...)".
struct BadValue {
  std::string key;  // "batches"
  std::string problem;
};

template <class T>
using Parser = std::function<T(const std::string&)>;

// An integer option's parser: decimal, in [min, max] (framework/parse.h's parse_int).
template <class T = int>
Parser<T> int_in(int64_t min, int64_t max) {
  return [=](const std::string& t) { return static_cast<T>(parse_int(t, "", min, max)); };
}

// An option's value as it was declared (Parsed<T>'s): the name --help gives
// it ("N", "auto|none|BYTES") and its default as text ("" = none given).
class DeclaredValue {
 public:
  virtual ~DeclaredValue() = default;
  virtual const std::string& value_name() const = 0;
  virtual const std::string& default_text() const = 0;
};

// An option's value semantic for Boost: one token, read by `parse` (not by
// boost::lexical_cast, which takes "+5", " 5" and, through strtod, "0x10" and
// "nan"), with a default that the same parser read from its text.
template <class T>
class Parsed : public po::value_semantic_codecvt_helper<char>, public DeclaredValue {
 public:
  Parsed(std::string key, std::string value_name, std::string default_text, Parser<T> parse)
      : key_(std::move(key)),
        value_name_(std::move(value_name)),
        default_text_(std::move(default_text)),
        parse_(std::move(parse)),
        default_(read(default_text_)) {}

  std::string name() const override {  // an empty default ("none given") is not shown
    return default_text_.empty() ? value_name_ : value_name_ + " (=" + default_text_ + ")";
  }
  const std::string& value_name() const override { return value_name_; }
  const std::string& default_text() const override { return default_text_; }
  unsigned min_tokens() const override { return 1; }
  unsigned max_tokens() const override { return 1; }
  bool is_composing() const override { return false; }
  bool is_required() const override { return false; }
  bool apply_default(boost::any& store) const override {
    store = default_;
    return true;
  }
  void notify(const boost::any&) const override {}

 protected:
  void xparse(boost::any& store, const std::vector<std::string>& tokens) const override {
    po::validators::check_first_occurrence(store);  // "given more than once"
    store = read(po::validators::get_single_string(tokens));
  }

 private:
  T read(const std::string& text) const {
    try {
      return parse_(text);
    } catch (const ParseError& e) {
      throw BadValue{key_, " " + e.problem()};
    } catch (const Error& e) {  // DeviceError: a whole sentence naming the string
      throw BadValue{key_, std::string(": ") + e.what()};
    }
  }

  std::string key_, value_name_, default_text_;
  Parser<T> parse_;
  T default_;
};

// Declares options on `d`: each with its key, the name of its value in --help,
// its default as text (read by the same parser, so it is valid by
// construction), its parser and its help.
class Declare {
 public:
  explicit Declare(po::options_description& d) : d_(d) {}

  template <class T>
  Declare& option(const char* key, const char* value_name, const char* def, Parser<T> parse, const char* help) {
    d_.add_options()(key, new Parsed<T>(key, value_name, def, std::move(parse)), help);
    return *this;
  }
  // A value taken as written (a path): its text is its value.
  Declare& text(const char* key, const char* value_name, const char* def, const char* help) {
    return option<std::string>(key, value_name, def, [](const std::string& t) { return t; }, help);
  }
  Declare& flag(const char* key, const char* help) {
    d_.add_options()(key, po::bool_switch(), help);
    return *this;
  }

 private:
  po::options_description& d_;
};

// Every option of `table` and its value, one "key=value" a line in the
// table's order: the value as the first of `sources` that gives the option
// spelled it (the command line, then a config file), a flag's as on or off,
// an option none gives as its default's text. The same options, however
// given, read the same; ranks compare it (train/runs/distributed_run.h).
std::string settings_text(const po::options_description& table, const std::vector<const po::parsed_options*>& sources,
                          const po::variables_map& vm);

// A po::error as one short line: "unknown option '--x' (see --help)", "option
// '--batches' needs a value", "given more than once"; `where` is the config
// file ("" on the command line). A quoted value past 64 characters is cut.
std::string option_error(const po::error& e, const std::string& where);

// `table` as a Markdown table, one row per option in the table's order: the
// option and its value's name as --help writes them, its default (where it
// has one) and its help, "| `--batches N` (`100`) | minibatches to train |";
// a flag "| `--quiet` | ... |", one with a short name "| `-h`, `--help` | ... |".
// A '|' is escaped, and a '<' outside `code`, so each cell reads as --help's text.
std::string markdown_table(const po::options_description& table);

}  // namespace amlp::train
