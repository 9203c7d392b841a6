#include "train/options/npy_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

#include "framework/parse.h"  // shown_path

namespace amlp::train {

namespace {

[[noreturn]] void fail(const std::string& shown, const std::string& why) {
  throw NpyError("'" + shown + "': " + why);
}

// Where the bracket or brace opening at `at` in the literal `h` closes
// (strings skipped), or npos.
size_t closing(const std::string& h, size_t at) {
  int depth = 0;
  for (size_t i = at; i < h.size(); ++i) {
    const char c = h[i];
    if (c == '\'' || c == '"') {
      i = h.find(c, i + 1);
      if (i == std::string::npos) return i;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if ((c == ')' || c == ']' || c == '}') && --depth == 0) {
      return i;
    }
  }
  return std::string::npos;
}

// NumPy reads a header whose dict has exactly the keys descr, fortran_order
// and shape ("Header does not contain the correct keys" otherwise): a key of
// the outer dict (a string at its top level followed by ':') that is none of
// them is refused, as NumPy would refuse the file.
void check_keys(const std::string& h, const std::string& shown) {
  const size_t open = h.find('{');
  int depth = 0;
  for (size_t i = open; i < h.size(); ++i) {
    const char c = h[i];
    if (c == '\'' || c == '"') {
      const size_t end = h.find(c, i + 1);
      if (end == std::string::npos) fail(shown, "not a NumPy file: an unterminated string in its header");
      size_t after = end + 1;
      while (after < h.size() && h[after] == ' ') ++after;
      const std::string key = h.substr(i + 1, end - i - 1);
      if (depth == 1 && after < h.size() && h[after] == ':' && key != "descr" && key != "fortran_order" &&
          key != "shape")
        fail(shown, "not a NumPy file: its header has the key " + quote(key) +
                        " (NumPy takes 'descr', 'fortran_order' and 'shape' only)");
      i = end;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if ((c == ')' || c == ']' || c == '}') && --depth == 0) {
      return;
    }
  }
}

// The value after 'key': in the dict literal `h`, up to its end (the
// quoted string, the True/False word, or the parenthesised tuple).
std::string dict_value(const std::string& h, const std::string& key, const std::string& shown) {
  const std::string quoted[] = {"'" + key + "'", "\"" + key + "\""};
  size_t at = std::string::npos;
  int times = 0;  // a key given twice: Python's literal keeps the last, a reader that took the first would differ
  for (const std::string& q : quoted)
    for (size_t i = h.find(q); i != std::string::npos; i = h.find(q, i + q.size())) {
      if (++times == 1) at = i + q.size();
    }
  if (at == std::string::npos) fail(shown, "not a NumPy file: its header has no '" + key + "'");
  if (times > 1) fail(shown, "not a NumPy file: its header gives '" + key + "' " + std::to_string(times) + " times");
  while (at < h.size() && (h[at] == ' ' || h[at] == ':')) ++at;
  if (at >= h.size()) fail(shown, "not a NumPy file: its header ends after '" + key + "'");
  size_t end = at;
  if (h[at] == '\'' || h[at] == '"') {
    end = h.find(h[at], at + 1);
    if (end == std::string::npos) fail(shown, "not a NumPy file: an unterminated string in its header");
    return h.substr(at + 1, end - at - 1);
  }
  if (h[at] == '(') {
    end = h.find(')', at);
    if (end == std::string::npos) fail(shown, "not a NumPy file: an unterminated shape in its header");
    return h.substr(at, end - at + 1);
  }
  if (h[at] == '[') {  // a structured dtype's list of fields, to its matching bracket
    end = closing(h, at);
    if (end == std::string::npos) fail(shown, "not a NumPy file: an unterminated list in its header");
    return h.substr(at, end - at + 1);
  }
  while (end < h.size() && h[end] != ',' && h[end] != '}' && h[end] != ' ') ++end;
  return h.substr(at, end - at);
}

std::vector<int64_t> parse_shape(const std::string& t, const std::string& shown) {
  std::vector<int64_t> shape;
  size_t i = 1;  // past '('
  for (;;) {
    while (i < t.size() && (t[i] == ' ' || t[i] == ',')) ++i;
    if (i >= t.size() || t[i] == ')') break;
    if (t[i] < '0' || t[i] > '9') fail(shown, "not a NumPy file: its shape " + quote(t) + " is not a tuple of sizes");
    int64_t v = 0;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
      if (v > (int64_t(1) << 40)) fail(shown, "its shape " + quote(t) + " is too large");
      v = v * 10 + (t[i++] - '0');
    }
    if (i < t.size() && t[i] == 'L') ++i;  // Python 2's longs
    shape.push_back(v);
  }
  return shape;
}

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

NpyHeader parse_npy_header(const char* bytes, size_t size, size_t file_size, const std::string& shown) {
  static const char kMagic[] = "\x93NUMPY";
  if (size < 10 || std::memcmp(bytes, kMagic, 6) != 0)
    fail(shown, "not a NumPy file (it does not begin with \\x93NUMPY; write it with numpy.save)");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (size_t(static_cast<unsigned char>(bytes[9])) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) fail(shown, "not a NumPy file: it ends inside its header");
    header_len = 0;
    for (int k = 0; k < 4; ++k) header_len |= size_t(static_cast<unsigned char>(bytes[8 + k])) << (8 * k);
    start = 12;
  } else {
    fail(shown, "NumPy format version " + std::to_string(major) + " (this reads 1, 2 and 3)");
  }
  if (header_len > (size_t(1) << 20)) fail(shown, "not a NumPy file: a header of " + std::to_string(header_len) + " bytes");
  if (start + header_len > size) fail(shown, "truncated: it ends inside its header");
  const std::string h(bytes + start, header_len);
  if (h.find('{') == std::string::npos) fail(shown, "not a NumPy file: its header is not a dict");
  check_keys(h, shown);
  const std::string descr = dict_value(h, "descr", shown);
  if (descr != "<f4" && descr != "=f4" && descr != "f4")
    fail(shown, "its dtype is " + quote(descr) + ", not float32 ('<f4'): save it with .astype(numpy.float32)");
  const std::string order = dict_value(h, "fortran_order", shown);
  if (order == "True") fail(shown, "it is in Fortran order: save a C-order array (numpy.ascontiguousarray)");
  if (order != "False") fail(shown, "not a NumPy file: 'fortran_order' is " + quote(order));
  const std::string shape_text = dict_value(h, "shape", shown);
  if (shape_text.empty() || shape_text[0] != '(') fail(shown, "not a NumPy file: its shape is not a tuple");
  NpyHeader out;
  out.shape = parse_shape(shape_text, shown);
  out.data_offset = start + header_len;
  if (out.shape.empty() || out.shape.size() > 2)
    fail(shown, "its shape is " + shape_text + ": it must have one or two dimensions");
  for (int64_t v : out.shape)
    if (v <= 0) fail(shown, "its shape is " + shape_text + ": an empty array");
  const unsigned __int128 need = static_cast<unsigned __int128>(out.rows()) * static_cast<uint64_t>(out.cols()) * 4;
  const size_t have = file_size > out.data_offset ? file_size - out.data_offset : 0;
  if (need > have)
    fail(shown, "truncated: its shape " + shape_text + " needs " + std::to_string(static_cast<uint64_t>(need)) +
                    " bytes of data, the file holds " + std::to_string(have));
  return out;
}

NpyHeader npy_header(const std::string& path) { return NpyFile::open(path).header(); }  // reads the header only

NpyFile NpyFile::open(const std::string& path) {
  const std::string shown = shown_path(path);
  // O_NONBLOCK: a FIFO is refused below instead of waiting for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(shown, "cannot read it: " + errno_text(errno));
  NpyFile f;
  f.fd_ = fd;  // closed by f's destructor, also when a check below throws
  f.shown_ = shown;
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    fail(shown, S_ISDIR(st.st_mode) ? "a directory, not a NumPy file" : "not a regular file (a pipe, FIFO or device cannot be read by row)");
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) fail(shown, "not a NumPy file: it is empty");
  f.size_ = size;
  f.mtime_ = st.st_mtim;
  f.ctime_ = st.st_ctim;
  // The header: at most 12 bytes of preamble and the 1 MiB parse_npy_header allows.
  std::string head(std::min<size_t>(size, 12 + (size_t(1) << 20)), '\0');
  size_t got = 0;
  while (got < head.size()) {
    const ssize_t n = ::pread(fd, head.data() + got, head.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(shown, "cannot read it: " + errno_text(errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  f.header_ = parse_npy_header(head.data(), got, size, shown);
  return f;
}

NpyFile::NpyFile(NpyFile&& o) noexcept
    : header_(std::move(o.header_)),
      shown_(std::move(o.shown_)),
      fd_(std::exchange(o.fd_, -1)),
      size_(o.size_),
      mtime_(o.mtime_),
      ctime_(o.ctime_) {}

NpyFile& NpyFile::operator=(NpyFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    header_ = std::move(o.header_);
    shown_ = std::move(o.shown_);
    fd_ = std::exchange(o.fd_, -1);
    size_ = o.size_;
    mtime_ = o.mtime_;
    ctime_ = o.ctime_;
  }
  return *this;
}

NpyFile::~NpyFile() {
  if (fd_ >= 0) ::close(fd_);
}

void NpyFile::check_unchanged() const {
  struct stat st{};
  if (::fstat(fd_, &st) != 0) fail(shown_, "cannot read it: " + errno_text(errno));
  const auto same = [](const timespec& a, const timespec& b) { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; };
  // The status-change time too: a writer can set the modification time back
  // (touch -d, utimensat), but not the ctime, which that very change moves.
  const auto same_time = [&] { return same(st.st_mtim, mtime_) && same(st.st_ctim, ctime_); };
  // Linux stamps a write's modification time before it moves the file's end,
  // so an append in flight can show a new time at the old size: looked at
  // again a moment later, it is named for what it did (grew), not "rewritten".
  if (!same_time() && static_cast<size_t>(st.st_size) == size_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (::fstat(fd_, &st) != 0) fail(shown_, "cannot read it: " + errno_text(errno));
  }
  const size_t now = static_cast<size_t>(st.st_size);
  const std::string sizes = " (" + std::to_string(size_) + " bytes when the run opened it, " + std::to_string(now) +
                            " now): the rows it would read are not the ones it started with";
  if (now < size_) fail(shown_, "it was truncated while the run read it" + sizes);
  if (now > size_) fail(shown_, "it grew while the run read it" + sizes);
  if (!same(st.st_mtim, mtime_))
    fail(shown_, "it was rewritten while the run read it (its modification time changed): the rows it would read "
                 "are not the ones it started with");
  if (!same(st.st_ctim, ctime_))
    fail(shown_, "it was changed while the run read it (its status-change time moved: a write whose modification "
                 "time was set back, or a new mode or owner): the rows it would read may not be the ones it started with");
}

void NpyFile::copy_row(int64_t r, float* out) const {
  const size_t row_bytes = static_cast<size_t>(cols()) * sizeof(float);
  const off_t at = static_cast<off_t>(header_.data_offset + static_cast<size_t>(r) * row_bytes);
  auto* bytes = reinterpret_cast<char*>(out);
  size_t got = 0;
  while (got < row_bytes) {
    const ssize_t n = ::pread(fd_, bytes + got, row_bytes - got, at + static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(shown_, "cannot read row " + std::to_string(r) + ": " + errno_text(errno));
    if (n == 0)
      fail(shown_, "it was truncated while the run read it: it ends before row " + std::to_string(r) + " (" +
                       std::to_string(at) + " + " + std::to_string(row_bytes) + " bytes)");
    got += static_cast<size_t>(n);
  }
  for (int64_t c = 0; c < cols(); ++c)
    if (!std::isfinite(out[c])) {
      char v[32];
      std::snprintf(v, sizeof v, "%g", static_cast<double>(out[c]));
      fail(shown_, "row " + std::to_string(r) + (cols() > 1 ? ", column " + std::to_string(c) : std::string()) +
                       " is " + v + ": the data must be finite (NaN or infinity would be trained into every weight)");
    }
}

}  // namespace amlp::train
