// The input files of train_mlp (--data, --targets, --load) and its outputs
// under a file size limit, in the forms a user's shell can hand it: a data
// file truncated while the run reads it, NaN in the data or the parameters,
// --load naming a directory, a FIFO, /dev/zero or a pipe, and `ulimit -f`
// with SIGXFSZ at its default disposition. Each ends in a run or in one line
// naming the option's file and the cause: exit 2 up front, exit 1 during the
// run (the summary marked failed) — never a signal death, a hang, or NaN
// trained silently. The binary starts with the signals a shell gives
// (train_test_util.h run_command, Spawned).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>

#include "framework/nn/checkpoint.h"
#include "framework/ops.h"
#include "npy_writer.h"
#include "sanitized.h"
#include "train/train_test_util.h"

namespace amlp::train {
namespace {

using amlp::testing::make_fifo;
using amlp::testing::Ran;
using amlp::testing::read_file;
using amlp::testing::read_json;
using amlp::testing::run_command;
using amlp::testing::run_train_mlp;
using amlp::testing::ScratchDir;
using amlp::testing::Spawned;
using amlp::testing::temporaries_of;
using amlp::testing::wait_for_lines;
using amlp::testing::write_npy;

const std::string kModel = "--device cpu --quiet --batch-size 64 --hidden 8 ";
const std::string kLoadModel = kModel + "--features 8 ";

// X (rows, 8) and y (rows) of small finite values; `bad_row` (if >= 0) gets `bad` in its column 3.
void write_data(const ScratchDir& dir, int64_t rows, int64_t bad_row = -1,
                float bad = std::numeric_limits<float>::quiet_NaN()) {
  std::vector<float> x(static_cast<size_t>(rows * 8)), y(static_cast<size_t>(rows));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 13) / 13.f - 0.5f;
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(i % 7) / 7.f;
  if (bad_row >= 0) x[static_cast<size_t>(bad_row * 8 + 3)] = bad;
  write_npy(dir.file("x.npy"), {rows, 8}, x);
  write_npy(dir.file("y.npy"), {rows}, y);
}

amlp::Json summary(const std::string& path) {
  const auto j = read_json(path);
  return j.is_array() ? j[0] : j;
}

// y with `bad` at `row`, beside a finite X.
void write_bad_targets(const ScratchDir& dir, int64_t rows, int64_t row, float bad) {
  write_data(dir, rows);
  std::vector<float> y(static_cast<size_t>(rows), 0.5f);
  y[static_cast<size_t>(row)] = bad;
  write_npy(dir.file("y.npy"), {rows}, y);
}

// A data or targets file changed while the run reads it: cut short (its
// rows are read with pread, not through a mapping that would fault with
// SIGBUS), grown, or rewritten in place. Each file is checked against what
// it was when the run opened it before each batch, so the run ends with one
// line naming the option, the file and the change, exit 1, the summary
// marked failed: never a signal death, nor rows the run did not start with.
TEST(HostileInputs, AnInputChangedDuringTheRunIsOneLineAndExitOne) {
  struct Change {
    const char* name;
    const char* says;
    void (*apply)(const std::string& path);
  };
  const Change changes[] = {
      {"truncated to 4096 bytes", "it was truncated while the run read it",
       [](const std::string& f) { ASSERT_EQ(::truncate(f.c_str(), 4096), 0); }},
      {"truncated to 0 bytes", "it was truncated while the run read it",
       [](const std::string& f) { ASSERT_EQ(::truncate(f.c_str(), 0), 0); }},
      {"grown by 4096 bytes", "it grew while the run read it",
       [](const std::string& f) { std::ofstream(f, std::ios::app) << std::string(4096, '\0'); }},
      {"rewritten in place", "it was rewritten while the run read it",
       [](const std::string& f) {
         std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a modification time of its own
         std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
         io.seekp(200);
         io.put('\0');
       }},
      // Its modification time set back after the write: the status-change time still moves.
      {"rewritten in place, its modification time restored", "it was changed while the run read it",
       [](const std::string& f) {
         struct stat before {};
         ASSERT_EQ(::stat(f.c_str(), &before), 0);
         std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a status-change time of its own
         {
           std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
           io.seekp(200);
           io.put('\0');
         }
         const struct timespec times[2] = {before.st_atim, before.st_mtim};
         ASSERT_EQ(::utimensat(AT_FDCWD, f.c_str(), times, 0), 0);
       }},
  };
  struct Input {
    const char* option;
    const char* file;
    const char* extra;
  };
  const Input inputs[] = {{"--data", "x.npy", ""}, {"--targets", "y.npy", ""}, {"--data", "x.npy", "--shuffle"}};
  for (const Input& in : inputs) {
    for (const Change& change : changes) {
      if (*in.extra && std::string(change.name).rfind("truncated", 0) != 0) continue;  // --shuffle: the cuts
      SCOPED_TRACE(std::string(in.option) + " " + in.extra + " " + change.name);
      ScratchDir dir;
      write_data(dir, 64 * 16);  // epochs of 16 batches
      const std::string log = dir.file("m.csv"), s = dir.file("s.json"), trace = dir.file("t.json");
      std::vector<std::string> args{"--device", "cpu", "--quiet", "--batch-size", "64", "--hidden", "8",
                                    "--data", dir.file("x.npy"), "--targets", dir.file("y.npy"),
                                    "--epochs", "1000", "--memory-log", log, "--summary-json", s,
                                    "--trace", trace};
      if (*in.extra) args.push_back(in.extra);
      Spawned run("train_mlp", args);
      ASSERT_TRUE(run.running());
      ASSERT_TRUE(wait_for_lines(log, 1 + 20, [&] { return !run.alive(); })) << run.err_so_far();  // epoch 2
      change.apply(dir.file(in.file));
      const Ran r = run.wait();
      EXPECT_EQ(run.signaled, 0) << "killed by signal " << run.signaled;
      EXPECT_EQ(r.code, 1) << r.err;
      EXPECT_EQ(r.err_lines(), 1u) << r.err;
      EXPECT_NE(r.err.find(std::string(in.option) + " '" + dir.file(in.file) + "': " + change.says), std::string::npos)
          << r.err;
      EXPECT_EQ(summary(s)["status"], "failed");
      const amlp::Json t = read_json(trace);
      EXPECT_EQ(t.at("otherData").at("status"), "failed");
      EXPECT_EQ("train_mlp: error: " + t.at("otherData").at("error").get<std::string>() + "\n", r.err);
      EXPECT_TRUE(temporaries_of(s).empty() && temporaries_of(trace).empty());
    }
  }
}

// NaN or infinity in --data is refused as the row is gathered, naming the
// file, the row and the value; nothing is saved from a run that failed.
TEST(HostileInputs, NonFiniteDataIsOneLineNamingTheRowNotTrained) {
  const std::pair<float, std::string> bads[] = {{std::numeric_limits<float>::quiet_NaN(), "nan"},
                                                {std::numeric_limits<float>::infinity(), "inf"}};
  for (const auto& [bad, says] : bads) {
    SCOPED_TRACE(says);
    ScratchDir dir;
    write_data(dir, 1000, 10, bad);
    const Ran r = run_train_mlp(kModel + "--data " + dir.file("x.npy") + " --targets " + dir.file("y.npy") +
                                " --check-finite --save " + dir.file("p.st") + " --summary-json " + dir.file("s.json"));
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_EQ(r.err_lines(), 1u) << r.err;
    EXPECT_NE(r.err.find("x.npy"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("row 10, column 3 is " + says), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir.file("p.st"))) << "a failed run saves nothing";
    EXPECT_EQ(summary(dir.file("s.json"))["status"], "failed");
  }
}

TEST(HostileInputs, NonFiniteTargetsAreOneLineNamingTheRow) {
  ScratchDir dir;
  write_bad_targets(dir, 1000, 7, -std::numeric_limits<float>::infinity());
  const Ran r = run_train_mlp(kModel + "--data " + dir.file("x.npy") + " --targets " + dir.file("y.npy"));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_NE(r.err.find("'" + dir.file("y.npy") + "': row 7 is -inf"), std::string::npos) << r.err;
}

// A --load file with a NaN weight is refused up front, naming the tensor.
TEST(HostileInputs, ALoadFileWithANanWeightIsRefusedUpFront) {
  ScratchDir dir;
  const std::string good = dir.file("good.st"), bad = dir.file("bad.st");
  ASSERT_EQ(run_train_mlp(kLoadModel + "--batches 2 --save " + good).code, 0);
  // The writer refuses a NaN: the file's bytes are patched instead. dense0.weight's
  // data comes first (the writer's order), after the 8-byte length and the header.
  std::string bytes = amlp::testing::read_file(good);
  uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = header << 8 | static_cast<unsigned char>(bytes[i]);
  ASSERT_NE(bytes.find("\"dense0.weight\":{\"dtype\":\"F32\",\"shape\":[8,8],\"data_offsets\":[0,"), std::string::npos)
      << bytes.substr(8, header);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(&bytes[8 + header + 5 * sizeof(float)], &nan, sizeof nan);  // little-endian hosts only, as the file
  dir.write("bad.st", bytes);
  const Ran r = run_train_mlp(kLoadModel + "--batches 2 --load " + bad + " --summary-json " + dir.file("s.json"));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_NE(r.err.find("--load: '" + bad + "': tensor 'dense0.weight' holds nan (value 5 of 64)"), std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("s.json"))) << "nothing ran";
}

// --load naming what is not a regular file: a directory, /dev/zero and a FIFO
// nobody writes to are one line each, exit 2, at once or after the bounded
// wait; a FIFO or pipe with a writer is read once and the run goes on.
TEST(HostileInputs, LoadFromADirectoryDevZeroOrASilentFifoIsOneLine) {
  ScratchDir dir;
  const std::pair<std::string, std::string> cases[] = {
      {dir.path(), "cannot read it: it is a directory"},
      {"/dev/zero", "not a safetensors file: a header of 0 bytes"},
      {make_fifo(dir, "silent"), "cannot read it: nothing came in 5 s"},
  };
  for (const auto& [path, says] : cases) {
    SCOPED_TRACE(path);
    const auto t0 = std::chrono::steady_clock::now();
    const Ran r = run_train_mlp(kLoadModel + "--batches 2 --load " + path);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(r.err_lines(), 1u) << r.err;
    EXPECT_NE(r.err.find("--load: '" + path + "': " + says), std::string::npos) << r.err;
    // A safety net against a hang, not a timing check: the wait is 5 s.
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(120));
  }
}

TEST(HostileInputs, LoadFromAPipeOrAFifoWithAWriterIsReadOnce) {
  ScratchDir dir;
  const std::string good = dir.file("good.st");
  ASSERT_EQ(run_train_mlp(kLoadModel + "--batches 2 --save " + good).code, 0);
  const std::string bin = amlp::testing::program_path("train_mlp");
  // A pipe on stdin (inside sh -c: run_command gives the command line itself stdin from /dev/null).
  Ran r = run_command("sh -c 'cat " + good + " | " + bin + " " + kLoadModel + "--batches 2 --load /dev/stdin'");
  EXPECT_EQ(r.code, 0) << r.err;
  // A FIFO whose writer comes a moment later.
  const std::string fifo = make_fifo(dir, "f");
  r = run_command("(sleep 1; cat " + good + " > " + fifo + ") & " + bin + " " + kLoadModel + "--batches 2 --load " + fifo +
                  "; s=$?; wait; exit $s");
  EXPECT_EQ(r.code, 0) << r.err;
}

// `ulimit -f` with SIGXFSZ at its default disposition (as a shell leaves it):
// train_mlp ignores the signal itself, so a write past the limit is EFBIG —
// one line, exit 1 — and the memory log keeps whole rows, --save no temporary.
TEST(HostileInputs, AFileSizeLimitIsOneLineNotADeathBySigxfsz) {
  const std::string bin = amlp::testing::program_path("train_mlp");
  {
    SCOPED_TRACE("stdout past the limit");
    ScratchDir dir;
    const Ran r = run_command("ulimit -f 1; (" + bin + " --config " + amlp::testing::source_file("configs/quick.ini") +
                              " --device cpu --quiet --batches 5 > " + dir.file("big.out") + ")");
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_EQ(r.err_lines(), 1u) << r.err;
    EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;
  }
  {
    SCOPED_TRACE("--memory-log past the limit");
    ScratchDir dir;
    const std::string log = dir.file("m.csv");
    const Ran r = run_command("ulimit -f 8; (" + bin + " " + kModel + "--batches 400 --memory-log " + log + " > /dev/null)");
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_EQ(r.err_lines(), 1u) << r.err;
    EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;
    const std::string text = read_file(log);
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(text.back(), '\n') << "half a row at the end";
    EXPECT_EQ(amlp::testing::read_csv_strict(log).problem, "");
  }
  for (const std::string option : {"--trace", "--summary-json"}) {
    SCOPED_TRACE(option + " past the limit");
    ScratchDir dir;
    const std::string out = dir.file("out.json");
    const Ran r = run_command("ulimit -f 1; (" + bin + " " + kModel + "--batches 20 " + option + " " + out + " > /dev/null)");
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_EQ(r.err_lines(), 1u) << r.err;
    EXPECT_NE(r.err.find(option), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out)) << "written whole or not at all";
    EXPECT_TRUE(temporaries_of(out).empty());
  }
  {
    SCOPED_TRACE("--save past the limit");
    ScratchDir dir;
    const std::string p = dir.file("p.st");
    const Ran r = run_command("ulimit -f 1; (" + bin + " --device cpu --quiet --batch-size 64 --features 64 --hidden 64 --batches 2 --save " + p +
                              " > /dev/null)");
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_EQ(r.err_lines(), 1u) << r.err;
    EXPECT_NE(r.err.find("--save"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(p));
    EXPECT_TRUE(temporaries_of(p).empty());
  }
}

// A safetensors header is read into its tensors' entries, not into a tree of
// every JSON value (which cost about 80 times the text): a 40 MiB header of
// one large __metadata__ array, or of a large value under a key a tensor may
// carry, is one line, exit 2, under an address-space limit far below what
// the tree would take (before: std::bad_alloc, exit 134).
TEST(HostileInputs, ALargeSafetensorsHeaderIsReadInMemoryOfItsOwnSize) {
  if (amlp::kSanitized) GTEST_SKIP() << "a sanitizer build reserves terabytes of shadow address space: ulimit -v cannot apply";
  ScratchDir dir;
  std::string zeros;
  for (int i = 0; i < (20 << 20); ++i) zeros += i ? ",0" : "0";  // 40 MiB of JSON numbers
  const std::pair<std::string, std::string> headers[] = {
      {"{\"__metadata__\":[" + zeros + "]}", "its __metadata__ is not an object"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":[)" + zeros + "]}}", "has no tensor 'dense0.weight'"},
  };
  int i = 0;
  for (const auto& [header, says] : headers) {
    SCOPED_TRACE(says);
    std::string file;
    for (int k = 0; k < 8; ++k) file.push_back(static_cast<char>((uint64_t(header.size()) >> (8 * k)) & 0xff));
    const std::string path = dir.write("big" + std::to_string(i++) + ".st", file + header + std::string(4, '\0'));
    const Ran r = amlp::testing::run_command("OPENBLAS_NUM_THREADS=1 bash -c 'ulimit -v 1048576; exec " +
                                             amlp::testing::program_path("train_mlp") + " " + kLoadModel +
                                             "--batches 1 --load " + path + "'");
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(r.err_lines(), 1u) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace amlp::train
