#include "train/byte_size.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace amlp::train {

size_t parse_byte_size(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument("'" + text + "' is not a byte size (" + why +
                                 "; expected e.g. 4096, 512KiB, 256MiB, 1G, 2GB)");
  };
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  const std::string num = text.substr(0, i);
  std::string suf = text.substr(i);
  for (char& c : suf) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (num.empty() || num.find('.') != num.rfind('.') || num == ".") throw bad("no number");
  static const struct {
    const char* suffix;
    double bytes;
  } kUnits[] = {{"", 1},         {"b", 1},      {"k", 0x1p10},   {"kib", 0x1p10}, {"m", 0x1p20},
                {"mib", 0x1p20}, {"g", 0x1p30}, {"gib", 0x1p30}, {"t", 0x1p40},   {"tib", 0x1p40},
                {"kb", 1e3},     {"mb", 1e6},   {"gb", 1e9},     {"tb", 1e12}};
  double mult = 0;
  for (const auto& u : kUnits)
    if (suf == u.suffix) mult = u.bytes;
  if (mult == 0) throw bad("unknown suffix '" + text.substr(i) + "'");
  const double v = std::strtod(num.c_str(), nullptr) * mult;
  if (!std::isfinite(v) || v >= 1.8e19) throw bad("too large");
  if (v != std::floor(v)) throw bad("not a whole number of bytes");
  return static_cast<size_t>(v);
}

static std::string fmt(double v, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, unit);
  return buf;
}

std::string format_mb(double bytes) { return fmt(bytes / 1e6, "MB"); }
std::string format_mib(double bytes) { return fmt(bytes / (1024.0 * 1024.0), "MiB"); }

}  // namespace amlp::train
