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
  double mult = 1;
  if (suf.empty() || suf == "b") mult = 1;
  else if (suf == "k" || suf == "kib") mult = 1024.0;
  else if (suf == "m" || suf == "mib") mult = 1024.0 * 1024;
  else if (suf == "g" || suf == "gib") mult = 1024.0 * 1024 * 1024;
  else if (suf == "t" || suf == "tib") mult = 1024.0 * 1024 * 1024 * 1024;
  else if (suf == "kb") mult = 1e3;
  else if (suf == "mb") mult = 1e6;
  else if (suf == "gb") mult = 1e9;
  else if (suf == "tb") mult = 1e12;
  else throw bad("unknown suffix '" + text.substr(i) + "'");
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
