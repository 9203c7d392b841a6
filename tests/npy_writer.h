// npy_writer.h — writes a float32 C-order array as numpy.save does (format
// 1.0, the header padded to 64 bytes), for the tests of --data and --targets.
//
//   write_npy(dir.file("x.npy"), {rows, cols}, values);
#pragma once
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace amlp::testing {

inline void write_npy(const std::string& path, const std::vector<int64_t>& shape, const std::vector<float>& data) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) dict += (i ? ", " : "") + std::to_string(shape[i]);
  dict += shape.size() == 1 ? ",), }" : "), }";
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::ofstream f(path, std::ios::binary);
  f << "\x93NUMPY" << char(1) << char(0) << char(dict.size() & 0xff) << char(dict.size() >> 8) << dict;
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size() * sizeof(float)));
}

}  // namespace amlp::testing
