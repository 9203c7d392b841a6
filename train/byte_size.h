// byte_size.h — byte counts as the summaries print them.
//
//   format_mb(1.5e6) == "1.5 MB"         format_mib(3 << 20) == "3.0 MiB"
//
// Reading byte counts people type ("256MiB", "1G") is amlp::parse_byte_size
// in framework/parse.h.
#pragma once
#include <cstddef>
#include <string>

namespace amlp::train {

// "123.4 MB" (10^6 bytes, the book's unit) and "117.7 MiB".
std::string format_mb(double bytes);
std::string format_mib(double bytes);

}  // namespace amlp::train
