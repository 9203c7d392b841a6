// npy_file.h — a NumPy .npy file of float32 in C order, open read-only,
// its rows read where they lie with pread(2) (never the whole file, and no
// memory mapping: a file truncated under a mapping kills the reader with
// SIGBUS, under pread it is a short read, an error). What
// `--data X.npy --targets Y.npy` train on: X (N, features), Y (N) or (N, 1).
//
//   NpyFile x = NpyFile::open("x.npy");      // throws NpyError: one line, the file named
//   x.rows(), x.cols()                        // (N, F); a 1-D file is (N, 1)
//   x.copy_row(r, out)                        // F floats of row r into out; throws NpyError
//                                             // if the file no longer holds it, or a value
//                                             // is NaN or infinite
//
// The header is checked as NumPy writes it (format 1.0, 2.0 or 3.0, a
// Python dict literal with 'descr', 'fortran_order' and 'shape'), and the
// file's size against the shape: a truncated file is refused before any row
// is read. npy_header() reads the header alone (for the options' checks).
#pragma once
#include <time.h>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace amlp::train {

struct NpyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A header, parsed and checked against the file's size.
struct NpyHeader {
  std::vector<int64_t> shape;  // as the file says: (N,), (N, 1) or (N, F)
  size_t data_offset = 0;      // where the data begins
  int64_t rows() const { return shape.empty() ? 0 : shape[0]; }
  int64_t cols() const { return shape.size() < 2 ? 1 : shape[1]; }
};

// Parses the header of `bytes` (the file's first `size` bytes, or all of
// it), which must hold float32 ('<f4') in C order, one or two dimensions,
// and at least `file_size` bytes for the data. `shown`: the file as
// messages name it. Throws NpyError.
NpyHeader parse_npy_header(const char* bytes, size_t size, size_t file_size, const std::string& shown);

// The header of the file at `path` (only its first bytes are read). Throws NpyError.
NpyHeader npy_header(const std::string& path);

class NpyFile {
 public:
  static NpyFile open(const std::string& path);  // a regular file, opened read-only; throws NpyError
  NpyFile() = default;
  NpyFile(NpyFile&& o) noexcept;
  NpyFile& operator=(NpyFile&& o) noexcept;
  NpyFile(const NpyFile&) = delete;
  NpyFile& operator=(const NpyFile&) = delete;
  ~NpyFile();

  const NpyHeader& header() const { return header_; }
  int64_t rows() const { return header_.rows(); }
  int64_t cols() const { return header_.cols(); }
  // cols() floats of row r (0 <= r < rows()) into `out`. Throws NpyError
  // when the file ends before the row (it shrank since it was opened) or a
  // value is NaN or infinite (naming the row, the column and the value).
  void copy_row(int64_t r, float* out) const;
  // Throws NpyError when the file is no longer the one opened: its size, its
  // modification time or its status-change time differ (truncated, grown or
  // rewritten under the run, also with its modification time set back, whose
  // rows would then not be the ones it started with). One fstat.
  void check_unchanged() const;

 private:
  NpyHeader header_;
  std::string shown_;  // the file as messages name it
  int fd_ = -1;
  size_t size_ = 0;         // at open
  struct timespec mtime_{};  // at open
  struct timespec ctime_{};  // at open
};

}  // namespace amlp::train
