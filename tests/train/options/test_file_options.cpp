// Covers train/options/file_options.cpp, through the real binary: the table
// of train_mlp's files holds every option whose value is a file (read from
// --help, so an option added without a row fails here), and each of them,
// against each hostile form of path a shell can hand it, ends in a run or in
// one line naming the option, exit 2 before anything runs or exit 1 during
// the run — never a hang, a crash or a signal death. The programs start with
// the signals a shell gives (train_test_util.h). Inputs cut short or grown
// during the run, NaN and Inf, and `ulimit -f`: test_hostile_inputs.cpp.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <regex>
#include <set>

#include "train/options/file_options.h"
#include "npy_writer.h"
#include "train/train_test_util.h"

namespace amlp::train {
namespace {

using amlp::testing::make_fifo;
using amlp::testing::read_file;
using amlp::testing::Ran;
using amlp::testing::run_command;
using amlp::testing::run_train_mlp;
using amlp::testing::ScratchDir;
using amlp::testing::split_lines;
using amlp::testing::write_npy;

// The options --help shows with a file for a value: FILE..., X.npy, Y.npy.
std::set<std::string> file_options_in_help() {
  const Ran r = run_train_mlp("--help");
  EXPECT_EQ(r.code, 0);
  std::set<std::string> found;
  const std::regex option(R"(^\s+--([a-z][a-z0-9-]*)(?: \[ --[a-z-]+ \])? ([A-Za-z0-9.|,_]+))");
  for (const std::string& line : split_lines(r.out)) {
    std::smatch m;
    if (!std::regex_search(line, m, option)) continue;
    const std::string value = m[2];
    const bool names_a_file = value.find("FILE") != std::string::npos || value.find(".npy") != std::string::npos ||
                              value.find("PATH") != std::string::npos || value.find("DIR") != std::string::npos;
    if (names_a_file) found.insert(m[1]);
  }
  return found;
}

TEST(FileOptions, EveryOptionThatNamesAFileHasARowAndEveryRowAnOption) {
  std::set<std::string> table;
  for (const FileOption& f : file_options()) table.insert(f.option);
  const std::set<std::string> help = file_options_in_help();
  EXPECT_EQ(help, table) << "an option whose value is a file needs a row in train/options/file_options.cpp "
                            "(and a form in this file's matrix), and each row an option";
  EXPECT_GE(help.size(), 8u) << "--help lists the file options";  // the parse above found them
  const Ran r = run_train_mlp("--help");
  for (const FileOption& f : file_options())
    EXPECT_NE(r.out.find(std::string("  --") + f.option + (f.role == FileRole::Input ? " (input): " : " (output): ")),
              std::string::npos)
        << "--help's table of files shows --" << f.option;
}

// What a hostile path is, made in `dir`; "" for the forms a role does not take.
struct Form {
  std::string name;
  std::function<std::string(const ScratchDir&, const FileOption&)> make;
  // What must happen: 0 a run, 2 refused before anything runs, 1 a failed run.
  std::function<int(const FileOption&)> expect;
};

std::string good_config(const ScratchDir& dir) { return dir.write("good.ini", "batches = 2\n"); }

// The command line around `--<option> <path>`: a model and the other files
// the option needs (--data needs --targets and the reverse; --load a model
// its file fits).
std::string args_for(const ScratchDir& dir, const FileOption& f, const std::string& path) {
  std::string a = "--device cpu --quiet --batch-size 64 --hidden 8 ";
  const std::string opt = std::string("--") + f.option + " '" + path + "'";
  if (std::string(f.option) == "data") return a + opt + " --targets " + dir.file("y.npy");
  if (std::string(f.option) == "targets") return a + "--data " + dir.file("x.npy") + " " + opt;
  if (std::string(f.option) == "load") return a + "--features 8 --batches 2 " + opt;
  return a + "--features 8 --batches 2 " + opt;
}

// A writer on an input FIFO's other end (bounded: it never outlives the test
// by more than its timeout); an output's reader is a FifoReader, open before
// the run starts.
std::string writer(const ScratchDir& dir, const FileOption& f, const std::string& fifo) {
  const std::string content = std::string(f.option) == "config" ? good_config(dir) : dir.file("good.st");
  return "(timeout 60 cat '" + content + "' > '" + fifo + "' &) ; ";
}

// At most `n` of the runs at once (each a train_mlp process; under the
// sanitizers each maps its shadow memory).
class Slots {
 public:
  explicit Slots(int n) : free_(n) {}
  Ran run(const std::string& command) {
    {
      std::unique_lock<std::mutex> l(m_);
      cv_.wait(l, [&] { return free_ > 0; });
      --free_;
    }
    Ran r = run_command(command);
    {
      std::lock_guard<std::mutex> l(m_);
      ++free_;
    }
    cv_.notify_one();
    return r;
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  int free_;
};

// A file the program may not open: mode 000. Root opens any file, so where the
// test runs as root the program runs as nobody (setpriv), as an unprivileged
// user would: a copy of it in the scratch folder, which nobody can reach
// whatever the checkout's folders allow, without the sanitizers' suppression
// files (in the checkout) and leak check (which cannot stop the threads of a
// process that changed its user); the folder and the other files stay readable to it.
bool as_root() { return ::geteuid() == 0; }
std::string as_nobody(const ScratchDir& dir) {
  const std::string copy = dir.file("train_mlp");
  if (::access(copy.c_str(), X_OK) != 0)
    EXPECT_EQ(run_command("cp '" + amlp::testing::program_path("train_mlp") + "' '" + copy + "' && chmod 755 '" + copy + "'").code, 0);
  return "/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups env ASAN_OPTIONS=detect_leaks=0 "
         "LSAN_OPTIONS= TSAN_OPTIONS='halt_on_error=1 atexit_sleep_ms=0' '" + copy + "'";
}

// A file of the right content for option `f` (a good input; for an output,
// a few words another run wrote), in `dir`: its path.
std::string held_content(const ScratchDir& dir, const FileOption& f) {
  const std::string option = f.option;
  if (option == "config") return good_config(dir);
  if (option == "data") return dir.file("x.npy");
  if (option == "targets") return dir.file("y.npy");
  if (option == "load") return dir.file("good.st");
  return dir.write("words-" + option, "what another run wrote\n");
}

TEST(FileOptions, EveryFileOptionAgainstEveryHostileForm) {
  if (as_root() && ::access("/usr/bin/setpriv", X_OK) != 0)
    GTEST_SKIP() << "running as root without /usr/bin/setpriv: no way to run as an unprivileged user";
  ScratchDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);  // the folder readable to nobody; only its secret files are not
  {  // the inputs the forms need: data, targets, a parameters file for the model
    std::vector<float> x(256 * 8, 0.25f), y(256, 0.5f);
    write_npy(dir.file("x.npy"), {256, 8}, x);
    write_npy(dir.file("y.npy"), {256}, y);
    const Ran r = run_train_mlp("--device cpu --quiet --batch-size 64 --features 8 --hidden 8 --batches 1 --save " +
                                dir.file("good.st"));
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const auto input = [](const FileOption& f) { return f.role == FileRole::Input; };
  // A file another writer holds (its advisory lock, as a run writing its
  // memory log holds it; here this test's process): an input is read as it
  // is, an output written whole replaces it, a memory log is refused up front.
  std::vector<int> held;  // the locks, held until the runs are done
  const auto locked = [&held](const ScratchDir& d, const FileOption& f) {
    const std::string option = f.option;
    const std::string p = d.write("held-" + option, read_file(held_content(d, f)));
    const int fd = ::open(p.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0 || ::flock(fd, LOCK_EX) != 0) return std::string();
    held.push_back(fd);
    return p;
  };
  const auto whole = [](const FileOption& f) { return f.role == FileRole::Input && f.may_be_pipe; };  // config, load
  std::vector<Form> forms = {
      {"an empty path", [](const ScratchDir&, const FileOption&) { return std::string(); },
       [](const FileOption&) { return 2; }},
      {"a directory", [](const ScratchDir& d, const FileOption&) { return d.path(); }, [](const FileOption&) { return 2; }},
      {"a link to nothing",
       [](const ScratchDir& d, const FileOption& f) {
         const std::string l = d.file(std::string("dangling-") + f.option);
         return ::symlink(d.file("nowhere").c_str(), l.c_str()) == 0 ? l : "";
       },
       [](const FileOption&) { return 2; }},
      {"a loop of links",
       [](const ScratchDir& d, const FileOption& f) {
         const std::string a = d.file(std::string("loop-a-") + f.option), b = d.file(std::string("loop-b-") + f.option);
         return ::symlink(b.c_str(), a.c_str()) == 0 && ::symlink(a.c_str(), b.c_str()) == 0 ? a : "";
       },
       [](const FileOption&) { return 2; }},
      {"/dev/zero", [](const ScratchDir&, const FileOption&) { return std::string("/dev/zero"); },
       [&](const FileOption& f) { return input(f) ? 2 : 0; }},
      // An empty config is a config of no keys: the run goes on.
      {"/dev/null", [](const ScratchDir&, const FileOption&) { return std::string("/dev/null"); },
       [&](const FileOption& f) { return !input(f) || std::string(f.option) == "config" ? 0 : 2; }},
      {"no permission",
       [](const ScratchDir& d, const FileOption& f) {
         const std::string p = d.write(std::string("secret-") + f.option, "batches = 2\n");
         return ::chmod(p.c_str(), 0) == 0 ? p : "";
       },
       [](const FileOption&) { return 2; }},
      {"a FIFO with no peer",
       [](const ScratchDir& d, const FileOption& f) { return make_fifo(d, std::string("lonely-") + f.option); },
       // Inputs: refused (not by row) or after their wait; outputs: the write fails during the run.
       [&](const FileOption& f) { return input(f) ? 2 : 1; }},
      {"a FIFO with a peer",
       [](const ScratchDir& d, const FileOption& f) { return make_fifo(d, std::string("peer-") + f.option); },
       [&](const FileOption& f) { return input(f) && !whole(f) ? 2 : 0; }},
      {"a file another writer holds", locked,
       [](const FileOption& f) { return std::string(f.option) == "memory-log" ? 2 : 0; }},
  };
  // Another user's file, which the program (run as nobody) reads as it is:
  // read-only to it in a directory it may write (an output refused as an open
  // for writing would refuse it, though a rename could replace it), and
  // writable to it in a sticky directory (written in place, but not replaced:
  // only its owner may rename over it there). Made where the test runs as root.
  const auto others = [&](const std::string& folder, mode_t folder_mode, mode_t file_mode) {
    return [=](const ScratchDir& d, const FileOption& f) {
      const std::string sub = d.file(folder);
      if (::mkdir(sub.c_str(), 0755) != 0 && errno != EEXIST) return std::string();
      if (::chmod(sub.c_str(), folder_mode) != 0) return std::string();
      const std::string p = sub + "/" + f.option;
      std::ofstream(p, std::ios::binary) << read_file(held_content(d, f));
      return ::chmod(p.c_str(), file_mode) == 0 ? p : std::string();
    };
  };
  if (as_root()) {
    forms.push_back({"another user's read-only file", others("open", 0777, 0644),
                     [&](const FileOption& f) { return input(f) ? 0 : 2; }});
    forms.push_back({"another user's file in a sticky directory", others("sticky", 01777, 0666),
                     [&](const FileOption& f) { return input(f) || std::string(f.option) == "memory-log" ? 0 : 2; }});
  }
  const std::set<std::string> as_another_user = {"no permission", "another user's read-only file",
                                                 "another user's file in a sticky directory"};
  struct Case {
    std::string what, command;
    int want;
    std::unique_ptr<amlp::testing::FifoReader> reader;  // an output FIFO's peer
    std::future<Ran> ran;
  };
  std::vector<Case> cases;
  Slots slots(8);
  const std::string bin = amlp::testing::program_path("train_mlp");
  for (const FileOption& f : file_options())
    for (const Form& form : forms) {
      const std::string path = form.make(dir, f);
      if (path.empty() && form.name != "an empty path") {
        ADD_FAILURE() << "could not make " << form.name << " for --" << f.option;
        continue;
      }
      std::string command = bin + " " + args_for(dir, f, path);
      if (as_another_user.count(form.name) && as_root()) command = as_nobody(dir) + " " + args_for(dir, f, path);
      Case c{"--" + std::string(f.option) + " on " + form.name, command, form.expect(f), nullptr, {}};
      // A peer: a reader for an output; a writer for an input read whole (--data
      // and --targets refuse a FIFO before anything reads it: no writer, none left waiting).
      if (form.name == "a FIFO with a peer" && f.role == FileRole::Output)
        c.reader = std::make_unique<amlp::testing::FifoReader>(path);
      if (form.name == "a FIFO with a peer" && whole(f)) c.command = command = writer(dir, f, path) + command;
      // All at once: the ones that wait out a silent FIFO wait together.
      c.ran = std::async(std::launch::async, [&slots, command = c.command] { return slots.run(command); });
      cases.push_back(std::move(c));
    }
  // Pipes: an input read whole takes one (/dev/stdin); --data and --targets refuse it.
  for (const FileOption& f : file_options()) {
    if (f.role != FileRole::Input) continue;
    const std::string content = std::string(f.option) == "config" ? good_config(dir) : dir.file("good.st");
    const std::string command =
        "sh -c \"cat '" + content + "' | " + bin + " " + args_for(dir, f, "/dev/stdin") + "\"";
    Case c{"--" + std::string(f.option) + " on a pipe", command, whole(f) ? 0 : 2, nullptr, {}};
    c.ran = std::async(std::launch::async, [&slots, command] { return slots.run(command); });
    cases.push_back(std::move(c));
  }
  for (Case& c : cases) {
    SCOPED_TRACE(c.what);
    const Ran r = c.ran.get();
    if (c.reader) c.reader->text();  // what the run wrote there, read to its end
    EXPECT_EQ(r.code, c.want) << c.command << "\n" << r.err;
    if (c.want == 0) continue;
    EXPECT_EQ(r.err_lines(), 1u) << r.err;
    const std::string option = c.what.substr(0, c.what.find(' '));
    EXPECT_TRUE(r.err.find(option) != std::string::npos ||
                (option == "--config" && r.err.find("config file") != std::string::npos))
        << "names " << option << ": " << r.err;
  }
  for (int fd : held) ::close(fd);
  const size_t inputs = static_cast<size_t>(std::count_if(file_options().begin(), file_options().end(), input));
  EXPECT_EQ(cases.size(), file_options().size() * forms.size() + inputs) << "the matrix: options x forms, and a pipe each input";
}

}  // namespace
}  // namespace amlp::train
