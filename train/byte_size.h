// byte_size.h — byte counts as people write them.
//
//   parse_byte_size("4096") == 4096      parse_byte_size("256MiB") == 256 << 20
//   parse_byte_size("1G")   == 1 << 30   parse_byte_size("1.5GB")  == 1500000000
//   format_mib(3 << 20) == "3.0 MiB"
#pragma once
#include <cstddef>
#include <string>

namespace amlp::train {

// A non-negative number (decimals allowed with a suffix) and an optional
// suffix: B; K, KB, KiB (1024); M, MB, MiB; G, GB, GiB; T, TB, TiB.
// K/M/G/T and *iB are powers of 1024, KB/MB/GB/TB powers of 1000.
// Case-insensitive. Throws std::invalid_argument with a one-line reason.
size_t parse_byte_size(const std::string& text);

// "123.4 MB" (10^6 bytes, the book's unit) and "117.7 MiB".
std::string format_mb(double bytes);
std::string format_mib(double bytes);

}  // namespace amlp::train
