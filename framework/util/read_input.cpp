// read_input.cpp — an input read once, with a bounded wait (read_input.h).
#include "framework/read_input.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace amlp {

InputReader::InputReader(const std::string& path, int wait_s) : wait_s_(wait_s) {
  // O_NONBLOCK: opening a FIFO does not wait for a writer (the reads below wait, bounded).
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd_ < 0) throw InputError(std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    throw InputError(std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd_);
    throw InputError("it is a directory");
  }
  if (S_ISREG(st.st_mode)) regular_size_ = static_cast<long long>(st.st_size);
}

InputReader::~InputReader() {
  if (fd_ >= 0) ::close(fd_);
}

size_t InputReader::read(size_t n, std::string* out) {
  size_t got = 0;
  char buf[65536];
  while (got < n) {
    // Until the writer's end: a FIFO polls ready when data comes or its
    // writer closes, never while no writer has opened it yet.
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, wait_s_ * 1000);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) throw InputError(std::strerror(errno));
    if (ready == 0)
      throw InputError("nothing came in " + std::to_string(wait_s_) + " s (a FIFO that no process writes to?)");
    const ssize_t k = ::read(fd_, buf, std::min(sizeof buf, n - got));
    if (k == 0) break;
    if (k < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (k < 0) throw InputError(std::strerror(errno));
    out->append(buf, static_cast<size_t>(k));
    got += static_cast<size_t>(k);
  }
  return got;
}

bool read_input(const std::string& path, size_t max_bytes, int wait_s, const std::string& what_it_is_not,
                std::string* text, std::string* why) {
  text->clear();
  try {
    InputReader in(path, wait_s);
    in.read(max_bytes + 1, text);
  } catch (const InputError& e) {
    *why = e.what();
    return false;
  }
  if (text->size() > max_bytes) {
    *why = "it is over " + std::to_string(max_bytes >> 20) + " MiB: not " + what_it_is_not;
    return false;
  }
  return true;
}

}  // namespace amlp
