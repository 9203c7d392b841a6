#include "framework/write_file.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <climits>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <utility>

#include "framework/error.h"
#include "framework/parse.h"

namespace amlp {

namespace {

// Why an open or write failed, in words: ENXIO from opening a FIFO without
// waiting means no process has it open for reading.
std::string reason(int err, bool fifo = false) {
  if (err == ENXIO && fifo) return "no process has the FIFO open for reading (start its reader first)";
  return std::strerror(err);
}

[[noreturn]] void fail(const std::string& path, int err, bool fifo = false) {
  throw Error("cannot write '" + shown_path(path) + "': " + reason(err, fifo));
}

// The directory holding `file` ("." for a bare name).
std::string directory_of(const std::string& file) {
  const size_t slash = file.find_last_of('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : file.substr(0, slash));
}

// Opens a FIFO or device for writing as it is, without waiting for a FIFO's
// reader; the descriptor blocks again afterwards, so a slow reader slows the
// writer instead of failing it. -1 and errno on failure.
int open_in_place(const std::string& path, int extra_flags) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK | extra_flags, 0666);
  if (fd < 0) return -1;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

// A record file's writer holds an exclusive advisory lock (flock) on it for
// as long as it writes, so that a second writer is refused instead of
// truncating the file under the first. "" when `fd` (a regular file) is not
// locked by another writer (`exclusive`: now locked by this one, until its
// close), else who holds it: "another process (pid N) is writing it", the
// pid from /proc/locks where it shows one.
std::string lock_problem(int fd, bool exclusive) {
  if (::flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0) {
    if (!exclusive) ::flock(fd, LOCK_UN);
    return "";
  }
  if (errno != EWOULDBLOCK) return "";  // a file system without flock: no lock to respect
  struct stat st {};
  std::string pid;
  if (::fstat(fd, &st) == 0) {
    // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF": the holder of a lock on this inode.
    char want[64];
    std::snprintf(want, sizeof want, "%02x:%02x:%llu ", major(st.st_dev), minor(st.st_dev),
                  static_cast<unsigned long long>(st.st_ino));
    if (FILE* f = std::fopen("/proc/locks", "re")) {
      char line[256];
      while (pid.empty() && std::fgets(line, sizeof line, f)) {
        char kind[16], mode[16], how[16];
        long holder = 0;
        int at = 0;
        if (std::sscanf(line, "%*[^:]: %15s %15s %15s %ld %n", kind, mode, how, &holder, &at) >= 4 &&
            std::string(kind) == "FLOCK" && std::strncmp(line + at, want, std::strlen(want)) == 0)
          pid = " (pid " + std::to_string(holder) + ")";
      }
      std::fclose(f);
    }
  }
  return "another process" + pid + " is writing it (it holds the file's lock): give this run a file of its own";
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

// What the program printed to stdout (fd 1) or stderr so far, written out:
// a file that is one of them continues after it.
void flush_printed(int fd) {
  if (fd == 1) {
    std::cout.flush();
    std::fflush(stdout);
  } else {
    std::cerr.flush();
    std::fflush(stderr);
  }
}

// Through our own stdout or stderr, after what was printed there already.
void write_through(const std::string& path, int fd, const std::string& content) {
  flush_printed(fd);
  NoSigpipe guard;
  if (const int err = write_all(fd, content)) fail(path, err);
}

// A FIFO, a device: opened for writing as it is, never created or replaced.
void write_in_place(const std::string& path, const std::string& content, bool fifo) {
  const int fd = open_in_place(path, 0);
  if (fd < 0) fail(path, errno, fifo);
  int err;
  {
    NoSigpipe guard;
    err = write_all(fd, content);
  }
  if (::close(fd) != 0 && !err) err = errno;
  if (err) fail(path, err);
}

// `file` + `suffix`, its last component cut so that it fits a directory
// entry (NAME_MAX bytes): a file whose name is near the limit still gets a
// temporary beside it.
std::string with_suffix(const std::string& file, const std::string& suffix) {
  const size_t slash = file.find_last_of('/');
  const size_t name = slash == std::string::npos ? 0 : slash + 1;
  if (file.size() - name + suffix.size() <= NAME_MAX) return file + suffix;
  return file.substr(0, name + (NAME_MAX - suffix.size())) + suffix;
}

// The temporaries being written now, by name, for remove_temporaries_in_progress
// (a signal handler: it may read them only through lock-free atomics, and
// unlink(2) is async-signal-safe). A slot is taken before its file is
// created and let go once it is renamed or removed; a writer that finds no
// free slot writes all the same, unlisted.
struct TemporarySlot {
  std::atomic<bool> taken{false};  // by a writer
  std::atomic<bool> listed{false};  // its name is complete: the handler may unlink it
  char name[PATH_MAX];
};
static_assert(std::atomic<bool>::is_always_lock_free, "a signal handler reads the slots");
TemporarySlot g_temporaries[8];

// A slot while it lives (none when every slot is taken); list(name) before
// the file is created, so no moment of its life goes unlisted.
class ListedTemporary {
 public:
  ListedTemporary() {
    for (TemporarySlot& s : g_temporaries) {
      bool free = false;
      if (s.taken.compare_exchange_strong(free, true)) {
        slot_ = &s;
        return;
      }
    }
  }
  ~ListedTemporary() {
    if (!slot_) return;
    slot_->listed.store(false);
    slot_->taken.store(false);
  }
  ListedTemporary(const ListedTemporary&) = delete;
  ListedTemporary& operator=(const ListedTemporary&) = delete;
  void list(const std::string& tmp) {
    if (!slot_) return;
    slot_->listed.store(false);
    if (tmp.size() >= PATH_MAX) return;
    std::memcpy(slot_->name, tmp.c_str(), tmp.size() + 1);
    slot_->listed.store(true);
  }

 private:
  TemporarySlot* slot_ = nullptr;
};

// A temporary beside `file` that no other writer uses: `file`.tmp.<pid>.<n>,
// created exclusively (0666 less the umask, as a new file would be). A fixed
// name would let two runs writing the same file at once rename each other's
// half-written temporaries into place. -1 and errno on failure.
// `listed`, where given, lists each name tried before it is created.
int try_open_temporary(const std::string& file, std::string* tmp, ListedTemporary* listed = nullptr) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0;; ++attempt) {
    *tmp = with_suffix(file, ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++));
    if (listed) listed->list(*tmp);
    const int fd = ::open(tmp->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST || attempt == 100) return fd;
  }
}

int open_temporary(const std::string& path, const std::string& file, std::string* tmp, ListedTemporary* listed) {
  const int fd = try_open_temporary(file, tmp, listed);
  if (fd < 0) fail(path, errno);
  return fd;
}

// The directory holding `file`, synced so the rename itself survives a crash.
// Best effort: the file is whole by now either way, and some file systems
// refuse to sync a directory.
void sync_directory(const std::string& file) {
  const std::string dir = directory_of(file);
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
  ListedTemporary listed;  // the temporary, from before its creation to after its rename or removal
  const int fd = open_temporary(path, file, &tmp, &listed);
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

void remove_temporaries_in_progress() {
  for (TemporarySlot& s : g_temporaries)
    if (s.listed.load()) (void)::unlink(s.name);
}

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
  if (!S_ISREG(st.st_mode)) return write_in_place(path, content, S_ISFIFO(st.st_mode));
  if (!S_ISLNK(link.st_mode)) return write_replacing(path, path, content, &st);
  // A link to a regular file: replace the file it names, keep the link.
  const std::unique_ptr<char, decltype(&std::free)> target(::realpath(path.c_str(), nullptr), &std::free);
  if (!target) fail(path, errno);
  write_replacing(path, target.get(), content, &st);
}

// --- a file of records ---------------------------------------------------------------

RecordFile::RecordFile(const std::string& path, const std::string& what) : path_(path), what_(what) {
  const auto failed = [&](int err, bool fifo) {
    throw Error("cannot write " + what_ + " '" + shown_path(path_) + "': " + reason(err, fifo));
  };
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) failed(EISDIR, false);
  if (const int fd = exists ? stdio_fd(st) : -1; fd >= 0) {  // after what the program printed, never truncated
    flush_printed(fd);
    fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (fd_ < 0) failed(errno, false);
    return;
  }
  // O_CREAT only for a new file: with it, Linux's protected_regular refuses
  // another user's file in a sticky directory, which the check before the run
  // (opened without it) passed.
  fd_ = open_in_place(path, exists ? 0 : O_CREAT);
  if (fd_ < 0) failed(errno, exists && S_ISFIFO(st.st_mode));
  regular_ = ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode);
  if (!regular_) return;
  // Locked before it is truncated: another writer's file is left as it is.
  const std::string locked = lock_problem(fd_, true);
  if (!locked.empty()) {
    close_file();
    throw Error("cannot write " + what_ + " '" + shown_path(path_) + "': " + locked);
  }
  if (::ftruncate(fd_, 0) != 0) {
    const int err = errno;
    close_file();
    failed(err, false);
  }
}

RecordFile::~RecordFile() { close_file(); }

void RecordFile::close_file() {
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));  // every record went out with its write(2)
}

RecordFile::RecordFile(RecordFile&& o) noexcept
    : path_(std::move(o.path_)),
      what_(std::move(o.what_)),
      fd_(std::exchange(o.fd_, -1)),
      regular_(o.regular_),
      whole_(o.whole_) {}

RecordFile& RecordFile::operator=(RecordFile&& o) noexcept {
  if (this != &o) {
    close_file();
    path_ = std::move(o.path_);
    what_ = std::move(o.what_);
    fd_ = std::exchange(o.fd_, -1);
    regular_ = o.regular_;
    whole_ = o.whole_;
  }
  return *this;
}

void RecordFile::append(const std::string& record) {
  if (fd_ < 0) return;
  int err;
  {
    NoSigpipe guard;
    err = write_all(fd_, record);  // one write(2) unless the kernel stops short; then the rest, to learn why
  }
  if (!err) {
    whole_ += static_cast<off_t>(record.size());
    return;
  }
  std::string cut;
  if (regular_ && (::ftruncate(fd_, whole_) != 0 || ::lseek(fd_, whole_, SEEK_SET) < 0))
    cut = " (and it could not be cut back to its last whole record: " + std::string(std::strerror(errno)) + ")";
  throw Error("cannot write " + what_ + " '" + shown_path(path_) + "': " + std::strerror(err) + cut);
}

// --- the check before a run -----------------------------------------------------------

namespace {

// A file that does not exist yet: its directory, and the name created (and
// removed) there as the writer will create it.
std::string new_file_problem(const std::string& path) {
  const std::string dir = directory_of(path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return "directory '" + shown_path(dir) + "' does not exist";
    return "directory '" + shown_path(dir) + "': " + std::strerror(errno);
  }
  if (!S_ISDIR(st.st_mode)) return "'" + shown_path(dir) + "' is not a directory";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0666);
  if (fd < 0) {
    if (errno == EEXIST) return "";  // another process made it just now: it is written as any file that exists
    if (errno == ENAMETOOLONG) return std::strerror(errno);
    return "cannot create a file in '" + shown_path(dir) + "': " + std::strerror(errno);
  }
  ::close(fd);
  ::unlink(path.c_str());
  return "";
}

// One look at `path`; `vanished` when it was there and then was not (another
// process's check, which creates the name and removes it, as below).
std::string output_problem_once(const std::string& path, OutputWay way, bool& vanished) {
  vanished = false;
  const auto gone = [&](int err) {
    vanished = err == ENOENT;
    return std::string(std::strerror(err));
  };
  struct stat link {};
  if (::lstat(path.c_str(), &link) != 0) return errno == ENOENT ? new_file_problem(path) : std::strerror(errno);
  struct stat st = link;
  if (S_ISLNK(link.st_mode) && ::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return std::strerror(errno);  // a loop: "Too many levels of symbolic links"
    char target[PATH_MAX];
    const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
    return "it is a symbolic link to '" + shown_path(std::string(target, n > 0 ? size_t(n) : 0)) +
           "', which does not exist";
  }
  if (S_ISDIR(st.st_mode)) return "it is a directory";
  if (stdio_fd(st) >= 0) return "";
  if (S_ISSOCK(st.st_mode)) return "it is a socket";
  if (!S_ISREG(st.st_mode))  // a FIFO or a device: opened without waiting when it is written
    return ::access(path.c_str(), W_OK) == 0 ? "" : gone(errno);
  if (way == OutputWay::Records) {  // opened as RecordFile opens it, less the truncation; its lock tested, not held
    const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return gone(errno);
    const std::string locked = lock_problem(fd, false);
    ::close(fd);
    return locked;
  }
  // Whole: a temporary beside the file it replaces (the one a link names).
  std::string file = path;
  if (S_ISLNK(link.st_mode)) {
    const std::unique_ptr<char, decltype(&std::free)> target(::realpath(path.c_str(), nullptr), &std::free);
    if (!target) return gone(errno);
    file = target.get();
  }
  // A rename judges the directory, not the file it replaces: the file is
  // judged here as an open for writing would judge it (a file this user may
  // not write is refused), and as the rename will be in a sticky directory,
  // where only the file's owner (or the directory's, or root) may replace it.
  if (::access(file.c_str(), W_OK) != 0) return gone(errno);
  struct stat dir {};
  const uid_t me = ::geteuid();
  if (::stat(directory_of(file).c_str(), &dir) == 0 && (dir.st_mode & S_ISVTX) && me != 0 && st.st_uid != me &&
      dir.st_uid != me)
    return "it belongs to another user (uid " + std::to_string(st.st_uid) + ") in the sticky directory '" +
           shown_path(directory_of(file)) + "', where only its owner may replace it";
  std::string tmp;
  const int fd = try_open_temporary(file, &tmp);
  if (fd < 0) return "cannot create a file in '" + shown_path(directory_of(file)) + "': " + std::strerror(errno);
  ::close(fd);
  ::unlink(tmp.c_str());
  return "";
}

}  // namespace

// A file that goes while it is looked at is looked at again: the ranks of one
// job check the same names at once, each creating a new one and removing it.
std::string output_problem(const std::string& path, OutputWay way) {
  if (path.empty()) return "no file named";
  std::string why;
  bool vanished = true;
  for (int look = 0; look < 8 && vanished; ++look) why = output_problem_once(path, way, vanished);
  return why;
}

std::string file_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode) || stdio_fd(st) >= 0) return "";
    return "inode " + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  }
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  if (!ec) p = std::filesystem::weakly_canonical(p, ec);
  if (ec) p = std::filesystem::path(path).lexically_normal();
  return "path " + p.string();
}

}  // namespace amlp
