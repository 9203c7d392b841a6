// Covers train/runs/memory_log.cpp, train/runs/experiment.cpp, train/report/summary_json.cpp, framework/util/trace.cpp, framework/util/write_file.cpp (train_mlp's outputs, through the real binary).
// test_train_logs.cpp — what train_mlp writes, parsed back: the memory log
// (header, one row per batch, loss only on synchronized batches, intact when a
// run fails half way), the Chrome trace, the summary JSON, and the plot that
// tools/plot_memory.py draws from them.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include "framework/json.h"
#include <set>

#include "framework/error.h"
#include "train/runs/memory_log.h"
#include "sanitized.h"
#include "train/train_test_util.h"

namespace amlp::train {
namespace {

using amlp::testing::FifoReader;
using amlp::testing::json_text;
using amlp::testing::parse_json;
using amlp::testing::is_full_device;
using amlp::testing::make_fifo;
using amlp::testing::make_full_device;
using amlp::testing::program_path;
using amlp::testing::Ran;
using amlp::testing::source_file;
using amlp::testing::read_file;
using amlp::testing::read_json;
using amlp::testing::run_command;
using amlp::testing::run_train_mlp;
using amlp::testing::ScratchDir;
using amlp::testing::split_lines;
using amlp::testing::temporaries_of;

// --- the memory log ---------------------------------------------------------------

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> f;
  size_t start = 0;
  for (;;) {
    size_t comma = line.find(',', start);
    f.push_back(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return f;
    start = comma + 1;
  }
}

const std::vector<std::string> kColumns{"batch",           "wall_s",         "queue_depth", "bytes_in_use",
                                        "peak_bytes",      "reserved_bytes", "rss_bytes",   "loss",
                                        "backlog_batches", "backlog_bytes",  "minor_faults"};

// Parses a memory log back; checks the header and that every row is whole.
std::vector<std::map<std::string, std::string>> read_memory_log(const std::string& path) {
  std::vector<std::string> lines = split_lines(read_file(path));
  EXPECT_FALSE(lines.empty()) << path;
  if (lines.empty()) return {};
  EXPECT_EQ(fields(lines[0]), kColumns);
  std::vector<std::map<std::string, std::string>> rows;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<std::string> f = fields(lines[i]);
    EXPECT_EQ(f.size(), kColumns.size()) << "row " << i << ": " << lines[i];
    std::map<std::string, std::string> row;
    for (size_t c = 0; c < f.size() && c < kColumns.size(); ++c) row[kColumns[c]] = f[c];
    rows.push_back(row);
  }
  return rows;
}

TEST(MemoryLog, WritesHeaderAndRowsFlushedAsTheyGo) {
  ScratchDir dir;
  {
    MemoryLog log(dir.file("m.csv"));
    BatchSample s;
    s.batch = 1;
    s.wall_s = 0.25;
    s.queue_depth = 26;
    s.bytes_in_use = 1000;
    s.peak_bytes = 2000;
    s.reserved_bytes = 3000;
    s.rss_bytes = 4000;
    s.backlog_batches = 1;
    s.backlog_bytes = 512;
    s.minor_faults = 7;
    log.write(s);
    s.batch = 2;
    s.loss = 0.125;
    log.write(s);
    // Flushed per row: readable before the log is closed.
    auto rows = read_memory_log(dir.file("m.csv"));
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0]["loss"], "");
    EXPECT_EQ(rows[1]["loss"], "0.125");
    EXPECT_EQ(rows[1]["queue_depth"], "26");
    EXPECT_EQ(rows[1]["bytes_in_use"], "1000");
    EXPECT_EQ(rows[1]["backlog_bytes"], "512");
    EXPECT_EQ(rows[1]["minor_faults"], "7");
  }
  EXPECT_THROW(MemoryLog(dir.file("no/such/dir.csv")), Error);
}

TEST(TrainMlpLogs, OneRowPerBatchLossOnlyWhereSynchronized) {
  ScratchDir dir;
  Ran r =
      run_train_mlp("--device cpu --sync every=3 --batches 7 --batch-size 16 --features 8 --hidden 8 --memory-log " +
                    dir.file("m.csv") + " --summary-json " + dir.file("s.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  auto rows = read_memory_log(dir.file("m.csv"));
  ASSERT_EQ(rows.size(), 7u);
  const unsigned long long run_faults = read_json(dir.file("s.json")).at(0).at("minor_faults").get<unsigned long long>();
  unsigned long long row_faults = 0;
  double last_t = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const int batch = static_cast<int>(i) + 1;
    EXPECT_EQ(std::stoi(rows[i]["batch"]), batch);
    EXPECT_EQ(rows[i]["loss"].empty(), batch % 3 != 0) << "batch " << batch;
    if (!rows[i]["loss"].empty()) EXPECT_TRUE(std::isfinite(std::stod(rows[i]["loss"])));
    const double t = std::stod(rows[i]["wall_s"]);
    EXPECT_GE(t, last_t);
    last_t = t;
    EXPECT_GT(std::stoull(rows[i]["bytes_in_use"]), 0u);
    EXPECT_GE(std::stoull(rows[i]["peak_bytes"]), std::stoull(rows[i]["bytes_in_use"]));
    EXPECT_GE(std::stoull(rows[i]["reserved_bytes"]), std::stoull(rows[i]["bytes_in_use"]));
    EXPECT_GT(std::stoull(rows[i]["rss_bytes"]), 0u);
    EXPECT_GE(std::stoi(rows[i]["backlog_batches"]), 0);
    // Each row counts the faults since the previous one: a whole number, and
    // the rows together no more than the run's (which counts on past the last row).
    EXPECT_EQ(rows[i]["minor_faults"].find_first_not_of("0123456789"), std::string::npos) << rows[i]["minor_faults"];
    row_faults += std::stoull(rows[i]["minor_faults"]);
  }
  EXPECT_LE(row_faults, run_faults);
}

TEST(TrainMlpLogs, CompareWritesOneLogAndOneSummaryPerMode) {
  ScratchDir dir;
  Ran r = run_train_mlp(
      "--device cpu --compare --compare-every 2 --batches 4 --batch-size 16 --features 8 --hidden 8 "
      "--memory-log " +
      dir.file("mem.csv") + " --summary-json " + dir.file("s.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* tag : {"batch", "none", "every2", "bounded"}) {
    auto rows = read_memory_log(dir.file(std::string("mem.") + tag + ".csv"));
    EXPECT_EQ(rows.size(), 4u) << tag;
    for (auto& row : rows)
      EXPECT_EQ(row["loss"].empty(), std::string(tag) == "none" || std::string(tag) == "bounded" ||
                                         (std::string(tag) == "every2" && std::stoi(row["batch"]) % 2));
  }
  const amlp::Json s = read_json(dir.file("s.json"));
  ASSERT_TRUE(s.is_array());
  ASSERT_EQ(s.size(), 4u);
  std::vector<std::string> labels;
  for (const amlp::Json& run : s) labels.push_back(run.at("label").get<std::string>());
  EXPECT_EQ(labels, (std::vector<std::string>{"batch", "none", "every=2", "bounded"}));
  EXPECT_GT(s[3].at("max_pending_bytes").get<double>(), 0);
}

TEST(TrainMlpLogs, SummaryJsonHasEveryKey) {
  ScratchDir dir;
  Ran r = run_train_mlp("--device cpu --sync none --batches 3 --batch-size 16 --features 8 --hidden 8 --summary-json " +
                        dir.file("s.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  const amlp::Json s = read_json(dir.file("s.json"));
  ASSERT_TRUE(s.is_array());
  ASSERT_EQ(s.size(), 1u);
  const amlp::Json& run = s[0];
  EXPECT_EQ(run.at("mode"), "none");
  EXPECT_EQ(run.at("device"), "cpu:0");
  for (const char* key :
       {"batches", "batch_size", "wall_s", "samples_per_s", "mem_increase_bytes", "rss_increase_bytes",
        "peak_queue_depth", "predicted_increase_bytes", "final_loss", "peak_backlog_batches", "bytes_per_batch",
        "minor_faults", "minor_faults_per_batch", "minor_faults_steady_per_batch", "data_bytes_per_batch",
        "peak_data_ahead_bytes", "peak_data_lead_batches", "working_set_bytes"})
    EXPECT_TRUE(run.at(key).is_number()) << key;
  EXPECT_EQ(run.at("alloc_policy"), "enqueue");
  EXPECT_EQ(run.at("data_queue"), false);
  EXPECT_EQ(run.at("batches"), 3);
  EXPECT_EQ(run.at("batch_size"), 16);
  EXPECT_TRUE(temporaries_of(dir.file("s.json")).empty());
}

// Large blocks are made resident in 2 MiB pages (by the populator, or by the
// worker as their writer starts), so an unsynchronized run, whose every batch
// takes fresh memory, faults a few times a batch instead of once per 4 KiB
// page (some 10000 for the 42 MB a batch takes at this size); RSS still
// follows the tracked bytes, and the frontend queues without paying for it.
TEST(TrainMlpLogs, FreshMemoryDoesNotFaultPageByPage) {
  ScratchDir dir;
  // The sanitizer builds check the counts' consistency and the backlog
  // alone (below), on 8 batches of 256 (14 MB each, against 31 MB).
  const int batches = amlp::testing::kSanitized ? 8 : 16;
  const int batch_size = amlp::testing::kSanitized ? 256 : 1024;
  Ran r = run_train_mlp("--device cpu --sync none --batches " + std::to_string(batches) + " --batch-size " +
                        std::to_string(batch_size) + " --features 512 --hidden 2048,512 --memory-log " + dir.file("m.csv") +
                        " --summary-json " + dir.file("s.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  auto rows = read_memory_log(dir.file("m.csv"));  // checks the header, minor_faults included
  ASSERT_EQ(rows.size(), size_t(batches));
  const amlp::Json run = read_json(dir.file("s.json")).at(0);
  // Each row counts the faults since the previous one, so the rows together
  // are no more than the run's total (which counts on past the last row).
  unsigned long long row_faults = 0;
  for (auto& row : rows) row_faults += std::stoull(row["minor_faults"]);
  EXPECT_LE(row_faults, run.at("minor_faults").get<unsigned long long>());
  const double steady = run.at("minor_faults_steady_per_batch").get<double>();
  EXPECT_GE(run.at("minor_faults").get<double>(), steady);
  const double tracked = run.at("mem_increase_bytes").get<double>(), rss = run.at("rss_increase_bytes").get<double>();
  EXPECT_GT(tracked, 4 * run.at("bytes_per_batch").get<double>()) << r.out;  // several batches were held at once
  if (amlp::testing::kSanitized)
    GTEST_SKIP() << "the fault and RSS bounds are checked in the release build: here the sanitizer's shadow memory "
                    "(faulted page by page, " << steady << " faults in the median steady batch, RSS +" << rss / 1e6
                 << " MB for " << tracked / 1e6 << " MB tracked) is counted with the program's";
  EXPECT_LT(steady, 50) << r.out;
  EXPECT_NEAR(rss, tracked, 0.1 * tracked) << r.out;
}

// /dev/stdout when stdout is a file (as here, and as with `> out.txt`): the
// summary follows what was printed, in that same file; /dev/stdout stays the
// link it is.
TEST(TrainMlpLogs, SummaryJsonToStdoutFollowsThePrintedLines) {
  Ran r = run_train_mlp("--device cpu --sync none --batches 2 --batch-size 16 --features 8 --hidden 8 "
                        "--summary-json /dev/stdout");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("model: ", 0), 0u) << r.out;
  const size_t json_at = r.out.find("\n[");
  ASSERT_NE(json_at, std::string::npos) << r.out;
  const amlp::Json s = parse_json(r.out.substr(json_at + 1));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].at("batches"), 2);
  EXPECT_TRUE(std::filesystem::is_symlink("/dev/stdout"));
  EXPECT_TRUE(temporaries_of("/dev/stdout").empty());
}

// A disk that fills up during the run: one line naming the file, status 1.
class TrainMlpFullDisk : public ::testing::TestWithParam<const char*> {};

TEST_P(TrainMlpFullDisk, OneLineNamingTheFileAndStatusOne) {
  ScratchDir dir;
  std::string why;
  const std::string full = make_full_device(dir, &why);
  if (full.empty()) GTEST_SKIP() << why;
  Ran r = run_train_mlp("--device cpu --sync none --batches 2 --batch-size 16 --features 8 --hidden 8 " +
                        std::string(GetParam()) + " " + full);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("train_mlp: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("'" + full + "': " + std::strerror(ENOSPC)), std::string::npos) << r.err;
  EXPECT_TRUE(is_full_device(full)) << "the device node was replaced";
  EXPECT_TRUE(temporaries_of(full).empty());
}

INSTANTIATE_TEST_SUITE_P(TrainMlp, TrainMlpFullDisk, ::testing::Values("--trace", "--summary-json", "--memory-log"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name;
                           for (const char* c = info.param; *c; ++c)
                             if (std::isalnum(static_cast<unsigned char>(*c))) name += *c;
                           return name;
                         });

// --trace into a FIFO (a consumer reading as it is written): the whole trace
// arrives there, and the FIFO stays a FIFO.
TEST(TrainMlpLogs, TraceIntoAFifo) {
  ScratchDir dir;
  const std::string fifo = make_fifo(dir, "trace.pipe");
  FifoReader reader(fifo);
  Ran r = run_train_mlp("--device cpu --sync none --batches 2 --batch-size 16 --features 8 --hidden 8 --trace " + fifo);
  ASSERT_EQ(r.code, 0) << r.err;
  const amlp::Json t = parse_json(reader.text());
  size_t spans = 0;
  for (const amlp::Json& e : t.at("traceEvents")) spans += e.at("ph") == "X";
  EXPECT_GT(spans, 2u * 10);
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_TRUE(temporaries_of(fifo).empty());
}

// A FIFO that no process reads: the run never waits for a reader.
// The memory log is opened before the first batch, the trace and the summary
// after the last; each fails the run at once with one line naming the FIFO
// and why, status 1, and the FIFO stays a FIFO. A run that waited for ever
// would be ended by `timeout`, TERM then KILL (the handler only notes a
// SIGTERM): a status other than 1, a failure, not a hung test.
class TrainMlpFifoWithNoReader : public ::testing::TestWithParam<const char*> {};

TEST_P(TrainMlpFifoWithNoReader, IsOneLineAndStatusOneNotAHang) {
  ScratchDir dir;
  const std::string fifo = make_fifo(dir, "out.pipe");
  const Ran r = run_command("timeout -k 5 20 " + program_path("train_mlp") +
                            " --device cpu --quiet --batches 2 --batch-size 8 --hidden 4 " + GetParam() + " " + fifo);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_NE(r.err.find("'" + fifo + "': no process has the FIFO open for reading"), std::string::npos) << r.err;
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

INSTANTIATE_TEST_SUITE_P(TrainMlp, TrainMlpFifoWithNoReader,
                         ::testing::Values("--memory-log", "--trace", "--summary-json"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name;
                           for (const char* c = info.param + 2; *c; ++c)
                             if (std::isalnum(static_cast<unsigned char>(*c))) name += *c;
                           return name;
                         });

// --- failing half way ---------------------------------------------------------------

// A file-size limit reached mid-log (a full disk, as `ulimit -f` makes one):
// the run fails with one line naming the log, status 1, and the log holds
// every whole row so far and no half row (never a file that ends mid-row,
// `...,325324` with no newline).
TEST(TrainMlpLogs, AFileSizeLimitLeavesOnlyWholeRows) {
  ScratchDir dir;
  const std::string log = dir.file("m.csv");
  const Ran r = run_command("bash -c \"trap '' XFSZ; ulimit -f 4; exec timeout -k 5 60 " + program_path("train_mlp") +
                            " --device cpu --quiet --batches 300 --batch-size 8 --hidden 4 --memory-log " + log + "\"");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_NE(r.err.find("cannot write --memory-log '" + log + "': " + std::strerror(EFBIG)), std::string::npos) << r.err;
  const amlp::testing::CsvRows rows = amlp::testing::read_csv_strict(log);
  EXPECT_EQ(rows.problem, "");
  EXPECT_GE(rows.rows.size(), 10u);
  EXPECT_LT(rows.rows.size(), 300u);
  EXPECT_LE(std::filesystem::file_size(log), 4096u);
}

// The trace outgrows a file-size limit after the run (its events are written
// at the end): one line naming the option, status 1, and the summary, which
// fits, says the run failed and why (the line names the option, not only the file).
TEST(TrainMlpLogs, ATraceThatCannotBeWrittenAfterTheRunNamesItsOption) {
  ScratchDir dir;
  const std::string trace = dir.file("t.json"), summary = dir.file("s.json");
  const Ran r = run_command("bash -c \"trap '' XFSZ; ulimit -f 16; exec timeout -k 5 60 " + program_path("train_mlp") +
                            " --device cpu --quiet --batches 200 --batch-size 8 --hidden 4 --trace " + trace +
                            " --summary-json " + summary + "\" >/dev/null");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err, "train_mlp: error: --trace: cannot write '" + trace + "': " + std::strerror(EFBIG) + "\n");
  const amlp::Json s = parse_json(read_file(summary));
  ASSERT_TRUE(s.is_array() && !s.empty()) << json_text(s);
  EXPECT_EQ(s[0].value("status", ""), "failed") << json_text(s);
  EXPECT_EQ(s[0].value("error", "").rfind("--trace: cannot write", 0), 0u) << json_text(s);
}

// Unsynchronized with a pool capped at ~10 batches' footprint: out of memory
// mid-run. One line naming the figures and what to do, status 1, every row
// so far whole, and the summary and trace written, marked failed.
TEST(TrainMlpLogs, OutOfMemoryMidRunKeepsTheRowsSoFar) {
  ScratchDir dir;
  Ran r = run_train_mlp(
      "--device cpu --sync none --batches 40 --batch-size 256 --features 512 --hidden 512,128 "
      "--memory-limit 48MiB --memory-log " +
      dir.file("m.csv") + " --trace " + dir.file("t.json") + " --summary-json " + dir.file("s.json"));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_NE(r.err.find("train_mlp: error: run 'none' failed at batch "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("out of memory on cpu:0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("past the limit of " + std::to_string(size_t(48) << 20) + " bytes"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--max-pending-bytes"), std::string::npos) << r.err;
  auto rows = read_memory_log(dir.file("m.csv"));
  ASSERT_GE(rows.size(), 2u);
  ASSERT_LT(rows.size(), 40u);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(std::stoi(rows[i]["batch"]), static_cast<int>(i) + 1);
    EXPECT_LE(std::stoull(rows[i]["reserved_bytes"]), size_t(48) << 20);
  }
  EXPECT_NE(r.err.find("at batch " + std::to_string(rows.size() + 1) + " of 40"), std::string::npos) << r.err;
  const amlp::Json s = read_json(dir.file("s.json"));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].at("status"), "failed");
  EXPECT_EQ(s[0].at("failed"), true);
  EXPECT_EQ(s[0].at("interrupted"), false);
  EXPECT_EQ("train_mlp: error: " + s[0].at("error").get<std::string>() + "\n", r.err);
  EXPECT_EQ(s[0].at("batches_done").get<size_t>(), rows.size());
  EXPECT_EQ(s[0].at("memory_limit_bytes").get<size_t>(), size_t(48) << 20);
  EXPECT_EQ(s[0].at("memory_limit_source"), "--memory-limit");
  const amlp::Json t = read_json(dir.file("t.json"));  // what was recorded, whole
  EXPECT_EQ(t.at("otherData").at("status"), "failed");
  EXPECT_EQ("train_mlp: error: " + t.at("otherData").at("error").get<std::string>() + "\n", r.err);
}

// A run whose training diverged (a learning rate so large that the final
// loss is inf or nan) is a failed run, not "completed" with exit 0: one line
// that says so and what to do, status 1, the summary marked failed with that
// line (`--lr 9223372036854775808` ends with loss -nan: exit 1, not 0).
// --check-finite stops such a run at its first non-finite loss instead (below).
TEST(TrainMlpLogs, ADivergedRunFailsWithStatusOne) {
  for (const std::string sync : {"batch", "none", "every=2"}) {
    SCOPED_TRACE(sync);
    ScratchDir dir;
    const Ran r = run_train_mlp("--device cpu --quiet --sync " + sync +
                                " --batches 3 --batch-size 8 --hidden 4 --lr 9223372036854775808 --summary-json " +
                                dir.file("s.json"));
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_EQ(r.err_lines(), 1u) << r.err;
    EXPECT_NE(r.err.find("diverged"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--lr"), std::string::npos) << r.err;
    const amlp::Json s = read_json(dir.file("s.json"));
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0].at("status"), "failed");
    EXPECT_EQ("train_mlp: error: " + s[0].at("error").get<std::string>() + "\n", r.err);
  }
}

// A queued check that fails (a non-finite loss from a huge step) surfaces at
// the next blocker: the synchronizing item() of the batch that queued it.
// That batch still has its row, with the loss empty.
TEST(TrainMlpLogs, KernelErrorSurfacesAtTheNextBlocker) {
  ScratchDir dir;
  Ran r = run_train_mlp(
      "--device cpu --sync batch --batches 20 --batch-size 64 --features 32 --hidden 32 --lr 1e6 "
      "--check-finite --memory-log " +
      dir.file("m.csv"));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_NE(r.err.find("kernel 'check_finite'"), std::string::npos) << r.err;
  auto rows = read_memory_log(dir.file("m.csv"));
  ASSERT_GE(rows.size(), 2u);
  ASSERT_LT(rows.size(), 20u);
  EXPECT_NE(r.err.find("at batch " + std::to_string(rows.size()) + " of 20"), std::string::npos) << r.err;
  EXPECT_EQ(rows.back()["batch"], std::to_string(rows.size()));
  EXPECT_EQ(rows.back()["loss"], "") << "the failing batch's row has no loss";
  rows.pop_back();
  for (auto& row : rows) EXPECT_TRUE(std::isfinite(std::stod(row["loss"])));
}

// --- the trace --------------------------------------------------------------------------

TEST(TrainMlpLogs, TraceIsChromeTraceJsonWithFrontendAndQueueTracks) {
  ScratchDir dir;
  Ran r = run_train_mlp("--device cpu --sync none --batches 3 --batch-size 16 --features 8 --hidden 8 --trace " +
                        dir.file("t.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  const amlp::Json t = read_json(dir.file("t.json"));
  ASSERT_TRUE(t.is_object());
  const amlp::Json& events = t.at("traceEvents");
  ASSERT_TRUE(events.is_array());
  std::map<int, std::string> track_names;
  std::map<int, int> spans_on;
  std::set<std::string> counters, frontend_spans;
  for (const amlp::Json& e : events) {
    const std::string ph = e.at("ph").get<std::string>();
    if (ph == "M" && e.at("name") == "thread_name")
      track_names[e.at("tid").get<int>()] = e.at("args").at("name").get<std::string>();
    if (ph == "X") {
      EXPECT_TRUE(e.at("ts").is_number_unsigned());
      EXPECT_TRUE(e.at("dur").is_number_unsigned());
      EXPECT_TRUE(e.at("args").at("seq").is_number_unsigned());
      spans_on[e.at("tid").get<int>()]++;
    }
    if (ph == "C") {
      counters.insert(e.at("name").get<std::string>());
      EXPECT_TRUE(e.at("args").at("value").is_number());
    }
  }
  int frontend = -1, queue = -1;
  for (auto& [tid, name] : track_names) {
    if (name.find("frontend") != std::string::npos) frontend = tid;
    if (name == "queue cpu:0") queue = tid;
  }
  ASSERT_GE(frontend, 0) << "no frontend track";
  ASSERT_GE(queue, 0) << "no queue cpu:0 track";
  EXPECT_GT(spans_on[frontend], 3 * 10);  // enqueue spans and the batch spans
  EXPECT_GT(spans_on[queue], 3 * 10);     // execution spans
  for (const amlp::Json& e : events)
    if (e.at("ph") == "X" && e.at("tid") == frontend) frontend_spans.insert(e.at("name").get<std::string>());
  EXPECT_TRUE(frontend_spans.count("batch"));
  EXPECT_TRUE(frontend_spans.count("matmul"));
  EXPECT_TRUE(counters.count("queue depth cpu:0"));
  EXPECT_TRUE(counters.count("bytes in use MiB cpu:0"));
  EXPECT_TRUE(counters.count("backlog batches"));
}

// --- the plot ---------------------------------------------------------------------------

// The interpreter tools/run.sh draws with: Debian's, which sees python3-matplotlib, else python3 on PATH.
using amlp::testing::host_python;

class PlotMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    if (amlp::testing::kSanitized)
      GTEST_SKIP() << "tools/plot_memory.py is Python, which no sanitizer instruments: the release build runs it";
    if (run_command(host_python() + " -c 'import matplotlib'").code != 0)
      GTEST_SKIP() << "no matplotlib for " << host_python() << " (apt-get install python3-matplotlib)";
    Ran r = run_train_mlp("--device cpu --compare --batches 4 --batch-size 16 --features 8 --hidden 8 --memory-log " +
                          dir.file("mem.csv") + " --summary-json " + dir.file("s.json"));
    ASSERT_EQ(r.code, 0) << r.err;
  }
  // tools/plot_memory.py with `args` (shell words) after the script's name
  Ran plot(const std::string& args) {
    return run_command(host_python() + " " + source_file("tools/plot_memory.py") + " " + args);
  }
  std::string compare_logs() const { return dir.path() + "/mem.*.csv " + dir.file("s.json"); }
  static size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }

  ScratchDir dir;
  const std::vector<std::string> modes{"batch", "every=2", "every=10", "none", "bounded"};
};

TEST_F(PlotMemory, SvgHasBothPanelsAndNamesEveryModeInEach) {
  Ran r = plot(compare_logs() + " -o " + dir.file("plot.svg"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "wrote " + dir.file("plot.svg") + "\n");
  const std::string svg = read_file(dir.file("plot.svg"));
  EXPECT_GT(svg.size(), 10000u);  // lines, ticks and text, not an empty canvas
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("<svg "), std::string::npos);
  EXPECT_EQ(svg.substr(svg.find_last_not_of("\n") - 5), "</svg>\n");
  // text stays text (svg.fonttype none): titles and labels can be searched
  EXPECT_EQ(count(svg, ">Memory in use while training</text>"), 1u);
  EXPECT_EQ(count(svg, ">Memory increase vs throughput</text>"), 1u);
  EXPECT_EQ(count(svg, ">memory increase (MB, log scale)</text>"), 1u);
  EXPECT_EQ(count(svg, "(cpu:0, 4 batches of 16)</text>"), 1u);
  EXPECT_EQ(count(svg, ">draining, until waitall()</text>"), 1u);
  // each mode in the legend of the memory-over-time panel, and beside its point
  // in the other, with its throughput against batch's ("none  1.90x")
  EXPECT_EQ(count(svg, ">batch</text>"), 2u);
  for (const std::string& mode : modes) {
    if (mode == "batch") continue;
    EXPECT_EQ(count(svg, ">" + mode + "</text>"), 1u) << mode;
    const size_t at = svg.find(">" + mode + "  ");
    ASSERT_NE(at, std::string::npos) << mode << ": no point label with its throughput ratio";
    const size_t end = svg.find("</text>", at);
    const std::string ratio = svg.substr(at + mode.size() + 3, end - at - mode.size() - 3);  // "1.90x"
    EXPECT_EQ(ratio.back(), 'x') << ratio;
    EXPECT_GT(std::stod(ratio), 0.0) << ratio;
  }
}

// With --host-work the title says how much, and of which kind.
TEST_F(PlotMemory, TheTitleNamesTheHostWork) {
  Ran r = run_train_mlp("--device cpu --sync none --batches 2 --batch-size 16 --features 8 --hidden 8 "
                        "--host-work 1500us --summary-json " + dir.file("hw.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  Ran p = plot(dir.file("hw.json") + " -o " + dir.file("hw.svg"));
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(count(read_file(dir.file("hw.svg")), "(cpu:0, 2 batches of 16, host work 1.5 ms (wait))</text>"), 1u);
}

TEST_F(PlotMemory, PngNameWritesAPng) {
  Ran r = plot(compare_logs() + " -o " + dir.file("plot.png"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "wrote " + dir.file("plot.png") + "\n");
  const std::string png = read_file(dir.file("plot.png"));
  ASSERT_GT(png.size(), 20000u);  // a drawn picture, not a blank one
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(png.substr(12, 4), "IHDR");
  auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(png[at + i]);
    return v;
  };
  EXPECT_GT(be32(16), 1500u);  // width: two panels side by side
  EXPECT_GT(be32(20), 500u);   // height
  EXPECT_FALSE(std::filesystem::exists(dir.file("plot.svg")));
}

TEST_F(PlotMemory, OneLogAloneDrawsItsPanel) {
  Ran r = plot(dir.file("mem.none.csv") + " -o " + dir.file("one.svg"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string svg = read_file(dir.file("one.svg"));
  EXPECT_EQ(count(svg, ">Memory in use while training</text>"), 1u);
  EXPECT_EQ(count(svg, ">Memory increase vs throughput</text>"), 0u);
  EXPECT_EQ(count(svg, ">none</text>"), 1u);
}

TEST_F(PlotMemory, BadInputIsOneLineAndExitTwo) {
  const std::string out = " -o " + dir.file("bad.svg");
  const std::string no_columns = dir.write("m.odd.csv", "a,b\n1,2\n");
  const std::string no_rows = dir.write("m.empty.csv", "batch,wall_s,bytes_in_use\n");
  const std::string not_a_number = dir.write("m.nan.csv", "batch,wall_s,bytes_in_use\n1,soon,3\n");
  const std::string not_json = dir.write("s.bad.json", "{\"mode\": ");
  const std::string no_runs = dir.write("s.none.json", "[{\"mode\": \"batch\"}]");
  const std::pair<std::string, std::string> cases[] = {
      {dir.file("missing.csv") + out, "missing.csv"},
      {no_columns + out, "no column batch"},
      {no_rows + out, "no rows"},
      {not_a_number + out, "line 2 wall_s"},
      {not_json + out, "not JSON"},
      {no_runs + out, "nothing to draw"},
      {dir.file("notes.txt") + out, "notes.txt"},
      {compare_logs() + " -o " + dir.file("plot.pdf"), ".svg or .png"},
      {compare_logs() + " -o " + dir.file("no/such/dir/plot.svg"), "does not exist"},
      {out, "required"},
  };
  for (const auto& [args, says] : cases) {
    Ran r = plot(args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_EQ(r.err_lines(), 1u) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("plot_memory.py: error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << args << "\n" << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("bad.svg")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("plot.pdf")));
}


// tools/trace_summary.py over a real trace: every queue's kernels, and the
// window split into GEMM ops, the rest and idle; bad input is exit 2.
TEST(TraceSummary, SplitsARealRunsQueueTimeByKernel) {
  ScratchDir dir;
  const Ran run = run_train_mlp("--device cpu --batches 4 --batch-size 64 --features 16 --hidden 32,16 --trace " +
                                dir.file("t.json"));
  ASSERT_EQ(run.code, 0) << run.err;
  const std::string tool = host_python() + " " + source_file("tools/trace_summary.py") + " ";
  const Ran r = run_command(tool + dir.file("t.json") + " --skip 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("queue cpu:0: 3 batches"), std::string::npos) << r.out;
  for (const char* k : {"linear_relu", "matmul", "linear_grad_input_relu", "sgd_update", "random_normal",
                        "GEMM ops", "the rest", "idle"})
    EXPECT_NE(r.out.find(k), std::string::npos) << k << " missing from\n" << r.out;
  for (const std::string bad : {dir.file("missing.json"), dir.file("t.json") + " --skip 4"}) {
    const Ran b = run_command(tool + bad);
    EXPECT_EQ(b.code, 2) << bad;
    EXPECT_EQ(b.err_lines(), 1u) << b.err;
  }
}

// Two runs on one memory log: the second is refused up front (exit 2, one
// line naming the option and that another process is writing the file),
// and the first's log stays its own: whole rows, no NUL bytes, nothing
// truncated under it.
TEST(TrainMlpLogs, ASecondRunOnAMemoryLogBeingWrittenIsRefused) {
  ScratchDir dir;
  const std::string log = dir.file("m.csv");
  amlp::testing::Spawned first("train_mlp", {"--device", "cpu", "--quiet", "--batches", "100000000", "--batch-size",
                                             "8", "--features", "4", "--hidden", "4", "--memory-log", log});
  ASSERT_TRUE(first.running());
  ASSERT_TRUE(amlp::testing::wait_for_lines(log, 3, [&] { return !first.alive(); })) << first.err_so_far();
  const Ran second = run_train_mlp("--device cpu --quiet --batches 2 --batch-size 8 --features 4 --hidden 4 "
                                   "--memory-log " + log);
  EXPECT_EQ(second.code, 2) << second.err;
  EXPECT_EQ(second.err_lines(), 1u) << second.err;
  EXPECT_NE(second.err.find("--memory-log: cannot write '" + log + "': another process (pid "), std::string::npos)
      << second.err;
  EXPECT_EQ(second.out, "") << "nothing ran";
  first.signal(SIGINT);
  const Ran r = first.wait();
  EXPECT_EQ(r.code, 130) << r.err;
  const std::string text = read_file(log);
  EXPECT_EQ(text.find('\0'), std::string::npos) << "NUL bytes in the first run's log";
  const amlp::testing::CsvRows rows = amlp::testing::read_csv_strict(log);
  EXPECT_EQ(rows.problem, "");
  EXPECT_GE(rows.rows.size(), 2u);
}

}  // namespace
}  // namespace amlp::train
