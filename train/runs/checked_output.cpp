#include "train/runs/checked_output.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

namespace amlp::train {

CheckedFdBuf::CheckedFdBuf(int fd, const char* name) : fd_(fd), name_(name) { setp(buf_, buf_ + sizeof buf_); }

std::string CheckedFdBuf::problem() const {
  return error_ ? std::string("cannot write to ") + name_ + ": " + std::strerror(error_) : std::string();
}

void CheckedFdBuf::fail(int err) {
  if (!error_) error_ = err;
}

bool CheckedFdBuf::write_out(const char* s, size_t n) {
  while (n > 0 && !error_) {
    const ssize_t w = ::write(fd_, s, n);
    if (w > 0) {
      s += w;
      n -= static_cast<size_t>(w);
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {  // a non-blocking stdout: wait, as a blocking one would
      pollfd p{fd_, POLLOUT, 0};
      while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
      }
    } else {
      error_ = w < 0 ? errno : EIO;  // 0 bytes for a non-empty write: nothing more will go
    }
  }
  return !error_;
}

bool CheckedFdBuf::drain() {
  const size_t n = static_cast<size_t>(pptr() - pbase());
  const bool ok = write_out(pbase(), n);
  setp(buf_, buf_ + sizeof buf_);  // what failed is dropped, not retried
  return ok;
}

CheckedFdBuf::int_type CheckedFdBuf::overflow(int_type c) {
  if (!drain()) return traits_type::eof();
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  *pptr() = traits_type::to_char_type(c);
  pbump(1);
  return c;
}

std::streamsize CheckedFdBuf::xsputn(const char* s, std::streamsize n) {
  if (error_) return 0;
  if (n <= epptr() - pptr()) {
    std::memcpy(pptr(), s, static_cast<size_t>(n));
    pbump(static_cast<int>(n));
    return n;
  }
  if (!drain() || !write_out(s, static_cast<size_t>(n))) return 0;
  return n;
}

int CheckedFdBuf::sync() { return drain() ? 0 : -1; }

void install_checked_stdout() {
  // A closed pipe (stdout, a FIFO output) is then a write error, EPIPE,
  // reported as a failed run, not a silent death by SIGPIPE; a write past
  // the file size limit (ulimit -f) is EFBIG the same way, not SIGXFSZ.
  ::signal(SIGPIPE, SIG_IGN);
  ::signal(SIGXFSZ, SIG_IGN);
  bool stdout_closed = false;
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    stdout_closed = stdout_closed || fd == STDOUT_FILENO;
    const int null = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);  // the lowest free number: this one
    if (null >= 0 && null != fd) {
      ::dup2(null, fd);
      ::close(null);
    }
  }
  static CheckedFdBuf* buf = new CheckedFdBuf(STDOUT_FILENO, "stdout");  // never freed: std::cout flushes at exit
  if (stdout_closed) buf->fail(EBADF);
  std::cout.flush();
  std::cout.rdbuf(buf);
}

std::string output_problem(const std::ostream& out) {
  std::streambuf* b = out.rdbuf();
  if (!b) return "";
  if (auto* checked = dynamic_cast<CheckedFdBuf*>(b); checked && checked->error()) return checked->problem();
  return out.bad() ? "cannot write the output" : "";
}

}  // namespace amlp::train
