#include "framework/write_file.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <memory>

#include "framework/error.h"

namespace amlp {

namespace {

[[noreturn]] void fail(const std::string& path, int err) {
  throw Error("cannot write '" + path + "': " + std::strerror(err));
}

// Every byte or an errno: a short write is retried, EINTR too.
int write_all(int fd, const std::string& content) {
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return 0;
}

// While it lives, a write to a pipe whose reader went away fails with EPIPE on
// this thread instead of killing the process with SIGPIPE: a write error to
// report in one line, like any other.
class NoSigpipe {
 public:
  NoSigpipe() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    was_pending_ = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
    blocked_ = pthread_sigmask(SIG_BLOCK, &pipe_, &old_) == 0;
  }
  ~NoSigpipe() {
    if (!blocked_) return;
    if (!was_pending_) {  // take back the SIGPIPE our own write raised, if any
      const int saved = errno;
      const timespec zero{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &zero) < 0 && errno == EINTR) {
      }
      errno = saved;
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  NoSigpipe(const NoSigpipe&) = delete;
  NoSigpipe& operator=(const NoSigpipe&) = delete;

 private:
  sigset_t pipe_, old_;
  bool was_pending_ = false, blocked_ = false;
};

// 1 or 2 when `st` is the file this process's stdout or stderr is, else -1.
int stdio_fd(const struct stat& st) {
  for (int fd : {1, 2}) {
    struct stat s {};
    if (::fstat(fd, &s) == 0 && s.st_dev == st.st_dev && s.st_ino == st.st_ino) return fd;
  }
  return -1;
}

// Through our own stdout or stderr, after what was printed there already.
void write_through(const std::string& path, int fd, const std::string& content) {
  if (fd == 1) {
    std::cout.flush();
    std::fflush(stdout);
  } else {
    std::cerr.flush();
    std::fflush(stderr);
  }
  NoSigpipe guard;
  if (const int err = write_all(fd, content)) fail(path, err);
}

// A FIFO, a device: opened for writing as it is, never created or replaced.
void write_in_place(const std::string& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) fail(path, errno);
  int err;
  {
    NoSigpipe guard;
    err = write_all(fd, content);
  }
  if (::close(fd) != 0 && !err) err = errno;
  if (err) fail(path, err);
}

// A temporary beside `file` that no other writer uses: `file`.tmp.<pid>.<n>,
// created exclusively (0666 less the umask, as a new file would be). A fixed
// name would let two runs writing the same file at once rename each other's
// half-written temporaries into place.
int open_temporary(const std::string& path, const std::string& file, std::string* tmp) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0;; ++attempt) {
    *tmp = file + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    const int fd = ::open(tmp->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return fd;
    if (errno != EEXIST || attempt == 100) fail(path, errno);
  }
}

// The directory holding `file`, synced so the rename itself survives a crash.
// Best effort: the file is whole by now either way, and some file systems
// refuse to sync a directory.
void sync_directory(const std::string& file) {
  const size_t slash = file.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : file.substr(0, slash));
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

// A temporary written, synced, closed and renamed over `file`; errors name
// `path` (what the user asked for; `file` differs when `path` is a link).
// `existing` is the file being replaced, if there is one: its permissions stay.
void write_replacing(const std::string& path, const std::string& file, const std::string& content,
                     const struct stat* existing) {
  std::string tmp;
  const int fd = open_temporary(path, file, &tmp);
  if (existing) (void)::fchmod(fd, existing->st_mode & 07777);  // best effort: some file systems refuse
  int err = write_all(fd, content);
  if (!err && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && !err) err = errno;
  if (!err && ::rename(tmp.c_str(), file.c_str()) != 0) err = errno;
  if (err) {
    ::unlink(tmp.c_str());
    fail(path, err);
  }
  sync_directory(file);
}

}  // namespace

void write_file(const std::string& path, const std::string& content) {
  struct stat link {};
  if (::lstat(path.c_str(), &link) != 0) {
    if (errno != ENOENT) fail(path, errno);
    write_replacing(path, path, content, nullptr);  // a new file (or a directory that is not there: ENOENT)
    return;
  }
  struct stat st = link;
  if (S_ISLNK(link.st_mode) && ::stat(path.c_str(), &st) != 0) fail(path, errno);  // a dangling link
  if (const int fd = stdio_fd(st); fd >= 0) return write_through(path, fd, content);
  if (!S_ISREG(st.st_mode)) return write_in_place(path, content);
  if (!S_ISLNK(link.st_mode)) return write_replacing(path, path, content, &st);
  // A link to a regular file: replace the file it names, keep the link.
  const std::unique_ptr<char, decltype(&std::free)> target(::realpath(path.c_str(), nullptr), &std::free);
  if (!target) fail(path, errno);
  write_replacing(path, target.get(), content, &st);
}

}  // namespace amlp
