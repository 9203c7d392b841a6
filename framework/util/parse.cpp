#include "framework/parse.h"

#include <cerrno>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace amlp {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool all_digits(std::string_view s) {
  for (char c : s)
    if (!is_digit(c)) return false;
  return !s.empty();
}

// A number the grammar accepted but the range did not is shown as typed
// (unquoted, like "(got 0)"), unless it is too long to read.
std::string shown_number(std::string_view text) { return text.size() <= 24 ? std::string(text) : quote(text); }

// "[-]digits" → magnitude and sign; false when it is not that shape.
// *overflow is set when the magnitude does not fit in 64 bits.
bool decimal_integer(std::string_view text, bool* negative, uint64_t* magnitude, bool* overflow) {
  *negative = !text.empty() && text[0] == '-';
  if (*negative) text.remove_prefix(1);
  if (!all_digits(text)) return false;
  uint64_t v = 0;
  *overflow = false;
  for (char c : text) {
    const uint64_t d = uint64_t(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) {
      *overflow = true;
      break;
    }
    v = v * 10 + d;
  }
  *magnitude = v;
  return true;
}

std::string int_range(int64_t min, int64_t max) {
  return "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
}
std::string uint_range(uint64_t min, uint64_t max) {
  return "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
}

// 1125899906842624 → "1024TiB"; counts that are not a whole number of KiB stay in bytes.
std::string byte_count(uint64_t n) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && n >= 1024 && n % 1024 == 0) {
    n /= 1024;
    ++u;
  }
  return std::to_string(n) + kUnits[u];
}

}  // namespace

ParseError::ParseError(std::string_view subject, std::string problem)
    : Error(std::string(subject) + (subject.empty() ? "" : " ") + problem), problem_(std::move(problem)) {}

void rethrow_naming_words(const ParseError& e, std::string_view what, std::string_view words) {
  const std::string head = "must be " + std::string(what);
  const std::string& p = e.problem();
  if (p.rfind(head, 0) != 0) throw e;
  throw ParseError("", "must be " + std::string(words) + " or " + std::string(what) + p.substr(head.size()));
}

std::string quote(std::string_view text) {
  constexpr size_t kMaxShown = 64;
  static const char kHex[] = "0123456789abcdef";
  std::string out = "'";
  size_t shown = 0;
  for (char ch : text) {
    if (shown == kMaxShown) {
      out += "...";
      break;
    }
    ++shown;
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\'':
        out += "\\'";
        break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  return out + "'";
}

namespace {

// The length of the UTF-8 character at the start of `s` that a terminal shows
// as a letter (U+00A0 and up, not a surrogate, at most U+10FFFF), or 0 when
// its first byte is not the start of one (ASCII included, escaped or not by
// the caller; a C1 control U+0080..U+009F; a byte that is not UTF-8).
size_t printable_utf8(std::string_view s) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const auto cont = [&](size_t i) { return i < s.size() && (byte(i) & 0xc0) == 0x80; };
  const unsigned char c = byte(0);
  size_t n = 0;
  uint32_t cp = 0;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
    cp = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    cp = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  for (size_t i = 1; i < n; ++i) {
    if (!cont(i)) return 0;
    cp = (cp << 6) | (byte(i) & 0x3f);
  }
  const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};  // shorter forms are overlong
  if (cp < least[n] || cp < 0xa0 || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return 0;
  return n;
}

// `text` with its control characters, backslashes and non-UTF-8 bytes escaped.
std::string escaped_path(std::string_view text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (const size_t n = printable_utf8(text.substr(i))) {
      out.append(text.data() + i, n);
      i += n;
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(text[i++]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c < 0x20 || c >= 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

std::string shown_path(std::string_view path) {
  constexpr size_t kHead = 100, kTail = 80;
  if (path.size() <= kMaxShownPath) return escaped_path(path);
  // Cut where a character starts: not inside a UTF-8 sequence.
  const auto continuation = [&](size_t i) { return (static_cast<unsigned char>(path[i]) & 0xc0) == 0x80; };
  size_t head = kHead;
  while (head > kHead - 3 && continuation(head)) --head;
  size_t tail = path.size() - kTail;
  while (tail < path.size() - kTail + 3 && continuation(tail)) ++tail;
  return escaped_path(path.substr(0, head)) + "..." + escaped_path(path.substr(tail));
}

int64_t parse_int(std::string_view text, std::string_view what, int64_t min, int64_t max) {
  bool negative = false, overflow = false;
  uint64_t mag = 0;
  const std::string allowed = "must be " + int_range(min, max);
  if (!decimal_integer(text, &negative, &mag, &overflow))
    throw ParseError(what, allowed + " (got " + quote(text) + ")");
  constexpr uint64_t kMinMagnitude = uint64_t(std::numeric_limits<int64_t>::max()) + 1;
  bool fits = !overflow && (negative ? mag <= kMinMagnitude : mag <= uint64_t(std::numeric_limits<int64_t>::max()));
  int64_t v = 0;
  if (fits) v = negative ? (mag == kMinMagnitude ? std::numeric_limits<int64_t>::min() : -int64_t(mag)) : int64_t(mag);
  if (!fits || v < min || v > max) throw ParseError(what, allowed + " (got " + shown_number(text) + ")");
  return v;
}

uint64_t parse_uint(std::string_view text, std::string_view what, uint64_t min, uint64_t max) {
  bool negative = false, overflow = false;
  uint64_t mag = 0;
  const std::string allowed = "must be " + uint_range(min, max);
  if (!decimal_integer(text, &negative, &mag, &overflow))
    throw ParseError(what, allowed + " (got " + quote(text) + ")");
  if (negative && mag == 0 && !overflow) negative = false;  // "-0" is zero
  if (overflow || negative || mag < min || mag > max)
    throw ParseError(what, allowed + " (got " + shown_number(text) + ")");
  return mag;
}

double parse_float(std::string_view text, std::string_view what) {
  // [-]digits[.digits][e[+-]digits], at least one mantissa digit.
  size_t i = 0, n = text.size();
  if (i < n && text[i] == '-') ++i;
  size_t mantissa_digits = 0;
  while (i < n && is_digit(text[i])) ++i, ++mantissa_digits;
  if (i < n && text[i] == '.') {
    ++i;
    while (i < n && is_digit(text[i])) ++i, ++mantissa_digits;
  }
  bool ok = mantissa_digits > 0;
  if (ok && i < n && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < n && (text[i] == '+' || text[i] == '-')) ++i;
    size_t exp_digits = 0;
    while (i < n && is_digit(text[i])) ++i, ++exp_digits;
    ok = exp_digits > 0;
  }
  if (!ok || i != n) throw ParseError(what, "must be a number (got " + quote(text) + ")");
  const std::string s(text);  // the grammar above is a subset of strtod's, so it reads all of it
  errno = 0;
  const double v = std::strtod(s.c_str(), nullptr);
  if (!std::isfinite(v))  // underflow (1e-999) reads as 0 or a denormal, which is fine
    throw ParseError(what, "must be a number of magnitude at most 1.8e308 (got " + shown_number(text) + ")");
  return v;
}

int64_t parse_duration_ns(std::string_view text, std::string_view what, int64_t max_ns) {
  const auto shown = [](int64_t ns) {  // the range's end in the largest unit that keeps it whole
    if (ns % 1000000000 == 0) return std::to_string(ns / 1000000000) + "s";
    if (ns % 1000000 == 0) return std::to_string(ns / 1000000) + "ms";
    if (ns % 1000 == 0) return std::to_string(ns / 1000) + "us";
    return std::to_string(ns) + "ns";
  };
  const auto bad = [&] {
    return ParseError(what, "must be a duration in [0, " + shown(max_ns) +
                                "] with a unit ns, us, ms or s, such as 2ms, 1.5ms or 250us (got " + quote(text) + ")");
  };
  if (text == "0") return 0;
  size_t i = 0;
  while (i < text.size() && (is_digit(text[i]) || text[i] == '.')) ++i;
  const std::string_view number = text.substr(0, i), unit = text.substr(i);
  double scale = 0;
  if (unit == "ns") scale = 1;
  else if (unit == "us") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s") scale = 1e9;
  if (scale == 0 || number.empty()) throw bad();
  double v;
  try {
    v = parse_float(number, what);  // digits and at most one '.' (a '-' never reaches it)
  } catch (const ParseError&) {
    throw bad();
  }
  const double ns = std::round(v * scale);
  if (!(ns <= double(max_ns))) throw bad();
  return static_cast<int64_t>(ns);
}

uint64_t parse_byte_size(std::string_view text, std::string_view what, uint64_t max) {
  const std::string allowed =
      "must be a byte size of at most " + byte_count(max) + ", such as 4096, 512KiB, 256MiB, 1G or 2GB";
  const auto bad = [&](const std::string& why) {
    return ParseError(what, allowed + (why.empty() ? "" : "; " + why) + " (got " + quote(text) + ")");
  };
  size_t i = 0;
  while (i < text.size() && is_digit(text[i])) ++i;
  const std::string_view whole = text.substr(0, i);
  std::string_view frac;
  if (i < text.size() && text[i] == '.') {
    const size_t start = ++i;
    while (i < text.size() && is_digit(text[i])) ++i;
    frac = text.substr(start, i - start);
  }
  if (whole.empty() && frac.empty()) throw bad("");
  std::string unit;
  for (char c : text.substr(i)) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) throw bad("");
    unit += static_cast<char>(c | 0x20);  // lower case
  }
  static const struct {
    const char* name;
    uint64_t bytes;
  } kUnits[] = {{"", 1},
                {"b", 1},
                {"k", uint64_t(1) << 10},
                {"kib", uint64_t(1) << 10},
                {"m", uint64_t(1) << 20},
                {"mib", uint64_t(1) << 20},
                {"g", uint64_t(1) << 30},
                {"gib", uint64_t(1) << 30},
                {"t", uint64_t(1) << 40},
                {"tib", uint64_t(1) << 40},
                {"kb", 1000},
                {"mb", 1000000},
                {"gb", 1000000000},
                {"tb", 1000000000000}};
  uint64_t mult = 0;
  for (const auto& u : kUnits)
    if (unit == u.name) mult = u.bytes;
  if (mult == 0) throw bad(quote(text.substr(i)) + " is not a unit");

  // whole * mult + frac * mult / 10^digits, exactly: no rounding anywhere.
  const auto too_large = [&] { return bad(""); };
  unsigned __int128 bytes = 0;
  for (char c : whole) {
    bytes = bytes * 10 + unsigned(c - '0');
    if (bytes > max) {  // leading zeros keep it 0; anything past max stays past it
      throw too_large();
    }
  }
  bytes *= mult;
  while (!frac.empty() && frac.back() == '0') frac.remove_suffix(1);
  if (!frac.empty()) {
    if (frac.size() > 24) throw bad("too many decimal places");
    unsigned __int128 f = 0, scale = 1;
    for (char c : frac) {
      f = f * 10 + unsigned(c - '0');
      scale *= 10;
    }
    const unsigned __int128 num = f * mult;  // < 10^24 * 2^40 < 2^120
    if (num % scale != 0) throw bad("not a whole number of bytes");
    bytes += num / scale;
  }
  if (bytes > max) throw too_large();
  return static_cast<uint64_t>(bytes);
}

std::vector<std::string_view> split_list(std::string_view text, char sep) {
  std::vector<std::string_view> items;
  for (;;) {
    const size_t at = text.find(sep);
    items.push_back(text.substr(0, at));
    if (at == std::string_view::npos) break;
    text.remove_prefix(at + 1);
  }
  return items;
}

std::vector<int64_t> parse_int_list(std::string_view text, std::string_view what, int64_t min, int64_t max) {
  const std::vector<std::string_view> items = split_list(text, ',');
  std::vector<int64_t> out;
  out.reserve(items.size());
  for (size_t k = 0; k < items.size(); ++k) {
    try {
      out.push_back(parse_int(items[k], "", min, max));
    } catch (const ParseError&) {
      const std::string_view item = items[k];
      bool negative = false, overflow = false;
      uint64_t mag = 0;
      const char* why = item.empty()                                           ? "is empty"
                        : decimal_integer(item, &negative, &mag, &overflow) ? "is out of range"
                                                                              : "is not a decimal integer";
      const std::string which = items.size() == 1 ? "it " : "item " + std::to_string(k + 1) + " ";
      throw ParseError(what, "must be comma-separated integers in [" + std::to_string(min) + ", " +
                                 std::to_string(max) + "] (got " + quote(text) + ": " + which + why + ")");
    }
  }
  return out;
}

namespace {
std::string with_unit(double v, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, unit);
  return buf;
}
}  // namespace

std::string format_mb(double bytes) { return with_unit(bytes / 1e6, "MB"); }
std::string format_mib(double bytes) { return with_unit(bytes / (1024.0 * 1024.0), "MiB"); }

}  // namespace amlp
