// parse.h — the one parser for numbers, byte sizes and lists people type:
// options, config values, device indices, layer specs, sync modes; and byte
// sizes written back the way the summaries print them.
//
//   parse_int("1024", "--batch-size", 1, 1 << 20)   == 1024
//   parse_int("0x10", "--batches", 1, 100)          throws "--batches must be an integer in [1, 100] (got '0x10')"
//   parse_float("0.005", "--lr")                     == 0.005   ("0x10", "nan", "1e999" throw)
//   parse_byte_size("256MiB", "--memory-limit", kMaxByteSize) == 256 << 20
//   parse_duration_ns("1.5ms", "--host-work", 60000000000) == 1500000
//   split_list("2048,,512", ',')                     == {"2048", "", "512"}
//   parse_int_list("8,4", "--hidden", 1, 1 << 20)    == {8, 4}
//   format_mb(1.5e6) == "1.5 MB"                   format_mib(3 << 20) == "3.0 MiB"
//   shown_path("out/a\nb.csv")                     == "out/a\\nb.csv"  (one line, in a message)
//
// Numbers are decimal only: no hex (0x10), no octal (010 is ten), no '+', no
// whitespace, no trailing junk. Every failure is a ParseError whose message
// is one line: "<what> must be <what is allowed, with its range> (got <text>)".
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "framework/error.h"

namespace amlp {

// what() is "<subject> <problem>"; problem() alone lets a caller name the
// value its own way ("--lr", "'lr' in run.ini").
struct ParseError : Error {
  ParseError(std::string_view subject, std::string problem);
  const std::string& problem() const { return problem_; }

 private:
  std::string problem_;  // "must be an integer in [1, 100] (got 0)"
};

// An integer in [min, max]: an optional '-' and decimal digits, nothing else.
int64_t parse_int(std::string_view text, std::string_view what, int64_t min, int64_t max);
uint64_t parse_uint(std::string_view text, std::string_view what, uint64_t min, uint64_t max);

// A finite decimal number: [-]digits[.digits][e[+-]digits] (".5" and "5."
// too). No hex floats, inf, nan, '+' or whitespace, which strtod accepts.
double parse_float(std::string_view text, std::string_view what);

// A byte count: a decimal number (a fraction only where the unit makes it
// whole) and an optional unit, case-insensitive: B; K, KiB (1024); M, MiB;
// G, GiB; T, TiB; KB, MB, GB, TB (powers of 1000). At most `max` bytes.
constexpr uint64_t kMaxByteSize = uint64_t(1) << 50;  // 1024TiB: byte arithmetic stays far from overflow
uint64_t parse_byte_size(std::string_view text, std::string_view what, uint64_t max = kMaxByteSize);

// A byte count as the summaries print it: "123.4 MB" (10^6 bytes, the book's
// unit) and "117.7 MiB".
std::string format_mb(double bytes);
std::string format_mib(double bytes);

// A duration: a non-negative decimal number and a unit, ns, us, ms or s
// ("2ms", "1.5ms", "250us", "0.01s"); "0" needs no unit. Returns whole
// nanoseconds (rounded to nearest), at most `max_ns`.
int64_t parse_duration_ns(std::string_view text, std::string_view what, int64_t max_ns);

// The items between separators, empty ones included: "" → {""}, "a," → {"a", ""}.
std::vector<std::string_view> split_list(std::string_view text, char sep = ',');

// Comma-separated integers, each in [min, max]; no empty items.
std::vector<int64_t> parse_int_list(std::string_view text, std::string_view what, int64_t min, int64_t max);

// For an option that takes some words besides a value: rethrows e, a
// ParseError from the value's parser whose problem begins "must be <what>",
// with the words named first ("must be a byte size in ..." becomes "must be
// 'auto', 'none' or a byte size in ..."); any other problem as it is.
[[noreturn]] void rethrow_naming_words(const ParseError& e, std::string_view what, std::string_view words);

// `text` in single quotes for an error message: control bytes escaped (\n,
// \x00), long text cut with "...", so a message stays one readable line.
// (Not named "quoted": with a std::string argument, argument-dependent lookup
// would find std::quoted from <iomanip> instead.)
std::string quote(std::string_view text);

// A file path as a message shows it, between the message's own quotes
// ("cannot write '" + shown_path(p) + "': ..."): control characters escaped
// (\n, \t, \x1b; C1 controls and bytes that are not UTF-8 as \xNN too), a
// backslash doubled, and a path over kMaxShownPath bytes cut to its first 100
// and last 80 bytes with "..." between (at a character's boundary), so the
// message stays one readable line whatever the path; letters of any script
// stay as they are. A plain short path is shown unchanged.
constexpr size_t kMaxShownPath = 200;
std::string shown_path(std::string_view path);

}  // namespace amlp
