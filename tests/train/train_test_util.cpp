// train_test_util.cpp — the test-support functions of train_test_util.h,
// compiled once into asyncmlp_test_support (tests/CMakeLists.txt).
#include "train/train_test_util.h"

#include <ostream>

extern char** environ;


namespace amlp::testing {

ScratchDir::ScratchDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "asyncmlp_test.XXXXXX").string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data())) path_ = buf.data();
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

bool ScratchDir::empty() const { return std::filesystem::is_empty(path_); }

std::string ScratchDir::write(const std::string& name, const std::string& text) const {
  std::ofstream(file(name)) << text;
  return file(name);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

::testing::AssertionResult page_section_is(const std::string& doc, const std::string& open, const std::string& close,
                                           const std::string& want, const std::string& source) {
  const std::string text = read_file(source_file(doc));
  const size_t a = text.find(open), b = text.find(close, a == std::string::npos ? 0 : a);
  if (a == std::string::npos) return ::testing::AssertionFailure() << doc << " lacks " << open;
  if (b == std::string::npos) return ::testing::AssertionFailure() << doc << " lacks " << close;
  if (text.compare(a + open.size(), b - a - open.size(), want) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << doc << "'s text between " << open << " and " << close
                                       << " must read (" << source << "'s):\n" << want;
}

amlp::Json read_json(const std::string& path) { return amlp::Json::parse(read_file(path)); }
amlp::Json parse_json(const std::string& text) { return amlp::Json::parse(text); }
std::string json_text(const amlp::Json& j) { return j.dump(); }

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

std::string make_char_device(const ScratchDir& dir, const std::string& name, unsigned major, unsigned minor,
                             const std::string& fallback, std::string* why) {
  std::string path = dir.file(name);
  if (::mknod(path.c_str(), S_IFCHR | 0666, makedev(major, minor)) != 0) {
    *why = std::string("mknod is not permitted here: ") + std::strerror(errno);
    struct stat st {};
    if (::geteuid() == 0 || ::lstat(fallback.c_str(), &st) != 0 || !S_ISCHR(st.st_mode) ||
        st.st_rdev != makedev(major, minor))
      return "";
    path = fallback;
  }
  const int fd = ::open(path.c_str(), O_WRONLY);
  if (fd < 0) {
    *why = "device " + path + " cannot be opened here (a nodev mount?): " + std::strerror(errno);
    if (path != fallback) ::unlink(path.c_str());
    return "";
  }
  ::close(fd);
  return path;
}

std::string make_full_device(const ScratchDir& dir, std::string* why) {
  return make_char_device(dir, "full", 1, 7, "/dev/full", why);
}

bool is_full_device(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 7);
}

std::vector<std::string> temporaries_of(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string prefix = p.filename().string() + ".tmp";
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(p.parent_path(), ec))
    if (e.path().filename().string().rfind(prefix, 0) == 0) found.push_back(e.path().string());
  return found;
}

std::string make_fifo(const ScratchDir& dir, const std::string& name) {
  const std::string path = dir.file(name);
  if (::mkfifo(path.c_str(), 0600) != 0) ADD_FAILURE() << "mkfifo " << path << ": " << std::strerror(errno);
  return path;
}

FifoReader::FifoReader(const std::string& path)
    : read_(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)), hold_(::open(path.c_str(), O_RDWR | O_CLOEXEC)) {
  if (read_ < 0 || hold_ < 0) ADD_FAILURE() << "cannot open FIFO " << path << ": " << std::strerror(errno);
  if (read_ >= 0) ::fcntl(read_, F_SETFL, ::fcntl(read_, F_GETFL) & ~O_NONBLOCK);
  text_ = std::async(std::launch::async, [fd = read_] {
    std::string out;
    char buf[65536];
    for (ssize_t n; fd >= 0 && (n = ::read(fd, buf, sizeof buf)) != 0;) {
      if (n > 0) out.append(buf, static_cast<size_t>(n));
      else if (errno != EINTR) break;
    }
    return out;
  });
}

FifoReader::~FifoReader() {
  if (text_.valid()) text();
}

std::string FifoReader::text() {
  if (hold_ >= 0) ::close(std::exchange(hold_, -1));
  std::string out = text_.get();
  if (read_ >= 0) ::close(std::exchange(read_, -1));
  return out;
}

namespace {

// What a shell gives the programs it starts: no signal blocked, every
// signal at its default disposition (SIGPIPE and SIGXFSZ kill; whatever this
// test process ignores or catches, the program does not inherit), so each
// program sets what it needs itself.
struct ShellSignals {
  posix_spawnattr_t attr;
  ShellSignals() {
    posix_spawnattr_init(&attr);
    sigset_t none, all;
    sigemptyset(&none);
    sigemptyset(&all);
    for (int sig = 1; sig < NSIG; ++sig)
      if (sig != SIGKILL && sig != SIGSTOP) sigaddset(&all, sig);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  }
  ~ShellSignals() { posix_spawnattr_destroy(&attr); }
  ShellSignals(const ShellSignals&) = delete;
  ShellSignals& operator=(const ShellSignals&) = delete;
};

}  // namespace

Ran run_command(const std::string& command) {
  ScratchDir io;
  std::string cmd = command + " >" + io.file("out") + " 2>" + io.file("err") + " </dev/null";
  std::string sh = "/bin/sh", dash_c = "-c";
  char* argv[] = {sh.data(), dash_c.data(), cmd.data(), nullptr};
  ShellSignals signals;
  pid_t pid = -1;
  int st = -1;
  const int rc = posix_spawn(&pid, sh.c_str(), nullptr, &signals.attr, argv, environ);
  if (rc != 0)
    ADD_FAILURE() << "posix_spawn /bin/sh: " << std::strerror(rc);
  else
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
  Ran r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = read_file(io.file("out"));
  r.err = read_file(io.file("err"));
  return r;
}

Ran run_program(const std::string& program, const std::string& args) {
  return run_command(program_path(program) + " " + args);
}

Ran run_train_mlp(const std::string& args) { return run_program("train_mlp", args); }

void expect_bad_input(const std::vector<std::pair<std::string, std::string>>& cases) {
  for (const auto& [args, says] : cases) {
    Ran r = run_train_mlp("--device cpu --batches 2 " + args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_EQ(r.err_lines(), 1) << args << ": " << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(r.out, "") << args;
  }
}

amlp::Json summary_of(const std::string& command) {
  ScratchDir dir;
  const Ran r = run_command(command + " --summary-json " + dir.file("s.json"));
  EXPECT_EQ(r.code, 0) << command << "\n" << r.err;
  return read_json(dir.file("s.json")).at(0);
}

std::string host_python() { return ::access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3"; }

Spawned::Spawned(const std::string& program, const std::vector<std::string>& args, int stdout_fd) {
  const std::string path = program_path(program);
  std::vector<std::string> words{path};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (stdout_fd == kStdoutToFile)
    posix_spawn_file_actions_addopen(&fa, 1, io_.file("out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  else if (stdout_fd == kStdoutClosed)
    posix_spawn_file_actions_addclose(&fa, 1);
  else
    posix_spawn_file_actions_adddup2(&fa, stdout_fd, 1);
  posix_spawn_file_actions_addopen(&fa, 2, io_.file("err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ShellSignals signals;
  const int rc = posix_spawn(&pid_, path.c_str(), &fa, &signals.attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    ADD_FAILURE() << "posix_spawn " << path << ": " << std::strerror(rc);
    pid_ = -1;
  }
}

Spawned::~Spawned() {
  if (pid_ > 0) {  // a test that gave up: leave no process behind
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

bool Spawned::alive() const {
  if (pid_ <= 0) return false;
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == 0;
}

void Spawned::signal(int sig) {
  if (pid_ > 0) ::kill(pid_, sig);
}

std::string Spawned::err_so_far() const { return read_file(io_.file("err")); }

Ran Spawned::wait(std::chrono::seconds limit) {
  Ran r;
  if (pid_ <= 0) return r;
  const auto until = std::chrono::steady_clock::now() + limit;
  int st = 0;
  for (;;) {
    const pid_t w = ::waitpid(pid_, &st, WNOHANG);
    if (w == pid_) break;
    if (std::chrono::steady_clock::now() > until) {
      ADD_FAILURE() << "still running after " << limit.count() << " s: killed";
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &st, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_ = -1;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  signaled = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  r.out = read_file(io_.file("out"));
  r.err = read_file(io_.file("err"));
  return r;
}

bool wait_for_lines(const std::string& path, size_t n, const std::function<bool()>& gone, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    const std::string text = read_file(path);
    size_t lines = 0;
    for (char c : text) lines += c == '\n';
    if (lines >= n) return true;
    if (gone()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> f;
  size_t start = 0;
  for (;;) {
    const size_t comma = line.find(',', start);
    f.push_back(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return f;
    start = comma + 1;
  }
}

CsvRows read_csv_strict(const std::string& path) {
  CsvRows out;
  const std::string text = read_file(path);
  if (text.empty()) {
    out.problem = "empty file";
    return out;
  }
  if (text.back() != '\n') out.problem = "the last line is cut short: '" + text.substr(text.rfind('\n') + 1) + "'";
  std::vector<std::string> lines = split_lines(text);
  out.header = csv_fields(lines[0]);
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<std::string> f = csv_fields(lines[i]);
    if (f.size() != out.header.size() && out.problem.empty())
      out.problem = "row " + std::to_string(i) + " has " + std::to_string(f.size()) + " fields: " + lines[i];
    if (!f.empty() && f[0] != std::to_string(i) && out.problem.empty())
      out.problem = "row " + std::to_string(i) + " is numbered " + f[0];
    out.rows.push_back(std::move(f));
  }
  return out;
}

}  // namespace amlp::testing
