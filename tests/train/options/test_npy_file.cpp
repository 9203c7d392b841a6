// Covers train/options/npy_file.cpp: the .npy headers NumPy writes (format
// 1.0, 2.0 and 3.0; 1-D and 2-D; padding), a mapped file's rows, and one
// line naming the file for each way a file can be wrong.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "npy_writer.h"
#include "train/options/npy_file.h"
#include "train/train_test_util.h"

namespace {

using amlp::testing::npy_bytes;
using amlp::testing::ScratchDir;
using amlp::testing::source_file;
using amlp::train::npy_header;
using amlp::train::NpyError;
using amlp::train::NpyFile;
using amlp::train::parse_npy_header;

std::string dict2(int64_t n, int64_t f, const char* descr = "<f4", const char* order = "False") {
  return std::string("{'descr': '") + descr + "', 'fortran_order': " + order + ", 'shape': (" + std::to_string(n) +
         ", " + std::to_string(f) + "), }";
}

std::string parse_problem(const std::string& bytes) {
  try {
    parse_npy_header(bytes.data(), bytes.size(), bytes.size(), "f.npy");
  } catch (const NpyError& e) {
    return e.what();
  }
  return "";
}

TEST(NpyHeader, ReadsWhatNumpyWritesInEachVersion) {
  const std::vector<float> data(6, 1.f);
  for (int major : {1, 2, 3}) {
    const std::string b = npy_bytes(dict2(3, 2), data, major);
    const auto h = parse_npy_header(b.data(), b.size(), b.size(), "f.npy");
    EXPECT_EQ(h.shape, (std::vector<int64_t>{3, 2})) << major;
    EXPECT_EQ(h.rows(), 3);
    EXPECT_EQ(h.cols(), 2);
    EXPECT_EQ(h.data_offset % 64, 0u) << "numpy pads the header to 64 bytes";
  }
  const std::string one = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", data);
  const auto h1 = parse_npy_header(one.data(), one.size(), one.size(), "f.npy");
  EXPECT_EQ(h1.shape, (std::vector<int64_t>{6}));
  EXPECT_EQ(h1.cols(), 1);
}

TEST(NpyHeader, EachWrongFileIsOneLineNamingItAndWhat) {
  const std::vector<float> six(6, 0.f);
  const std::pair<std::string, std::string> cases[] = {
      {"hello, world", "'f.npy': not a NumPy file (it does not begin with \\x93NUMPY"},
      {"", "'f.npy': not a NumPy file"},
      {npy_bytes(dict2(3, 2, "<f8"), six), "'f.npy': its dtype is '<f8', not float32 ('<f4')"},
      {npy_bytes(dict2(3, 2, ">f4"), six), "its dtype is '>f4'"},
      {npy_bytes(dict2(3, 2, "<i4"), six), "its dtype is '<i4'"},
      {npy_bytes(dict2(3, 2, "<f4", "True"), six), "'f.npy': it is in Fortran order"},
      {npy_bytes(dict2(3, 3), six), "'f.npy': truncated: its shape (3, 3) needs 36 bytes of data, the file holds 24"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 1), }", six), "one or two dimensions"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", six), "one or two dimensions"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }", six), "an empty array"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (a, 3), }", six), "is not a tuple of sizes"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, }", six), "its header has no 'shape'"},
      {npy_bytes("{'fortran_order': False, 'shape': (6,), }", six), "its header has no 'descr'"},
      {npy_bytes("not a dict", six), "its header is not a dict"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999, 3), }", six), "too large"},
      {npy_bytes(dict2(3, 2), six, 4), "NumPy format version 4"},
      {npy_bytes(dict2(3, 2), six).substr(0, 40), "truncated: it ends inside its header"},
      // A key twice: Python's literal keeps the last ('<f8' here), so taking the first would misread the data.
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), 'descr': '<f8', }", six),
       "its header gives 'descr' 2 times"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), \"shape\": (6,), }", six),
       "its header gives 'shape' 2 times"},
      // Keys NumPy refuses ("Header does not contain the correct keys").
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), 'extra': 1, }", six),
       "'f.npy': not a NumPy file: its header has the key 'extra' (NumPy takes 'descr', 'fortran_order' and 'shape' only)"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), 'x\x1b[31m': 1, }", six),
       "its header has the key 'x\\x1b[31m'"},
      // Bytes of the file are shown quoted with escapes: one line, no terminal escape, nothing cut at a NUL.
      {npy_bytes(dict2(3, 2, "\x1b[31mX\nY"), six), "its dtype is '\\x1b[31mX\\nY', not float32"},
      {npy_bytes(std::string("{'descr': '<f") + '\0' + "x', 'fortran_order': False, 'shape': (3, 2), }", six),
       "its dtype is '<f\\x00x', not float32"},
      {npy_bytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3, 2), }", six),
       "its dtype is '[(\\'a\\', \\'<f4\\')]', not float32"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (a\x1b, 3), }", six),
       "its shape '(a\\x1b, 3)' is not a tuple of sizes"},
  };
  for (const auto& [bytes, want] : cases) {
    const std::string got = parse_problem(bytes);
    EXPECT_NE(got.find(want), std::string::npos) << "want '" << want << "', got '" << got << "'";
    EXPECT_EQ(got.find('\n'), std::string::npos) << got;
    EXPECT_EQ(got.find('\x1b'), std::string::npos) << got;
  }
}

TEST(NpyFile, MapsTheFileAndCopiesItsRows) {
  ScratchDir dir;
  std::vector<float> data(12);
  for (size_t i = 0; i < data.size(); ++i) data[i] = 0.5f * float(i);
  {
    std::ofstream(dir.file("x.npy"), std::ios::binary) << npy_bytes(dict2(4, 3), data);
  }
  const NpyFile f = NpyFile::open(dir.file("x.npy"));
  EXPECT_EQ(f.rows(), 4);
  EXPECT_EQ(f.cols(), 3);
  float row[3];
  f.copy_row(2, row);
  EXPECT_EQ(row[0], 3.f);
  EXPECT_EQ(row[2], 4.f);
  EXPECT_EQ(npy_header(dir.file("x.npy")).shape, (std::vector<int64_t>{4, 3}));
  for (const char* bad : {"missing.npy", ""}) {
    try {
      NpyFile::open(dir.file(bad));
      ADD_FAILURE() << bad << " opened";
    } catch (const NpyError& e) {
      EXPECT_NE(std::string(e.what()).find(bad[0] ? "cannot read it: No such file" : "a directory, not a NumPy file"),
                std::string::npos)
          << e.what();
    }
  }
}

// The fuzzing corpus (tools/fuzz_npy.sh's seeds) is what numpy.save wrote:
// the float32 ones open with their shapes, the others are refused saying why.
TEST(NpyFile, ReadsWhatNumpyItselfWrote) {
  const std::pair<const char*, std::vector<int64_t>> good[] = {
      {"x_2d_v1.npy", {4, 3}}, {"x_2d_v2.npy", {2, 3}}, {"x_2d_v3.npy", {3, 2}},
      {"y_1d_v1.npy", {4}},    {"y_col_v1.npy", {4, 1}},
  };
  for (const auto& [name, shape] : good) {
    const NpyFile f = NpyFile::open(source_file(std::string("tests/data/npy_corpus/") + name));
    EXPECT_EQ(f.header().shape, shape) << name;
    std::vector<float> row(static_cast<size_t>(f.cols()));
    f.copy_row(f.rows() - 1, row.data());  // numpy.arange: the last row ends at rows*cols - 1
    EXPECT_EQ(row.back(), float(f.rows() * f.cols() - 1)) << name;
  }
  const std::pair<const char*, const char*> bad[] = {
      {"x_f8.npy", "its dtype is '<f8'"},
      {"x_fortran.npy", "it is in Fortran order"},
      {"x_3d.npy", "one or two dimensions"},
      {"x_big_endian.npy", "its dtype is '>f4'"},
  };
  for (const auto& [name, want] : bad) {
    try {
      NpyFile::open(source_file(std::string("tests/data/npy_corpus/") + name));
      ADD_FAILURE() << name << " opened";
    } catch (const NpyError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << name << ": " << e.what();
    }
  }
}

}  // namespace
