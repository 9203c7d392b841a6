// npy_writer.h — a float32 C-order array's bytes as numpy.save writes them
// (the header padded to a multiple of 64 bytes), for the tests of the .npy
// reader and of --data and --targets.
//
//   std::string b = npy_bytes("{'descr': '<f4', ...}", values, /*major=*/2);  // any header dict, any version
//   write_npy(dir.file("x.npy"), {rows, cols}, values);                      // a well-formed file
//   write_linear_data(x, y, 1000, 4, /*y_divisor=*/2, /*y_column=*/true);     // a data set to learn
#pragma once
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace amlp::testing {

// Magic, version, header length (2 bytes in format 1, 4 in 2 and 3), `dict`
// padded with spaces and ended by '\n', then the data.
inline std::string npy_bytes(const std::string& dict, const std::vector<float>& data, int major = 1) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string h = dict;
  while ((prefix + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const size_t len = h.size();
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (major != 1) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>((len >> 24) & 0xff);
  }
  out += h;
  out.append(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float));
  return out;
}

inline void write_npy(const std::string& path, const std::vector<int64_t>& shape, const std::vector<float>& data) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) dict += (i ? ", " : "") + std::to_string(shape[i]);
  dict += shape.size() == 1 ? ",), }" : "), }";
  std::ofstream(path, std::ios::binary) << npy_bytes(dict, data);
}

// A data set a model can learn: X (rows, cols) in [-1, 1], a fixed pattern
// of tenths, and y = 1 + sum(X's row) / y_divisor, shaped (rows, 1) with
// `y_column`, else (rows).
inline void write_linear_data(const std::string& x_path, const std::string& y_path, int rows, int cols,
                              float y_divisor, bool y_column) {
  std::vector<float> xs, ys;
  for (int r = 0; r < rows; ++r) {
    float sum = 0;
    for (int c = 0; c < cols; ++c) {
      xs.push_back(float(((r * 7 + c * 13) % 21) - 10) / 10.f);
      sum += xs.back();
    }
    ys.push_back(1.f + sum / y_divisor);
  }
  write_npy(x_path, {rows, cols}, xs);
  write_npy(y_path, y_column ? std::vector<int64_t>{rows, 1} : std::vector<int64_t>{rows}, ys);
}

}  // namespace amlp::testing
