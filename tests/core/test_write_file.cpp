// Covers framework/core/write_file.cpp, framework/core/trace.cpp, train/report/summary_json.cpp, train/runs/memory_log.cpp.
// the one writer of whole files (framework/write_file.h)
// and the two JSON files written through it, parsed back with nlohmann-json:
// a regular file is replaced whole with no temporary left, a FIFO or a device is
// written in place and stays what it was, and every failure (a directory that
// is gone, a full disk, a reader that went away) is one error naming the file.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <iterator>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "framework/error.h"
#include "framework/trace.h"
#include "framework/write_file.h"
#include "train/runs/memory_log.h"
#include "train/report/summary_json.h"
#include "train/train_test_util.h"

namespace amlp {
namespace {

using testing::is_full_device;
using testing::make_full_device;
using testing::read_file;
using testing::read_json;
using testing::FifoReader;
using testing::make_fifo;
using testing::ScratchDir;
using testing::temporaries_of;
using testing::make_char_device;

// The message of the amlp::Error that f throws; "" when it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string expected_error(const std::string& path, int err) {
  return "cannot write '" + path + "': " + std::strerror(err);
}

mode_t file_type(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? (st.st_mode & S_IFMT) : 0;
}

// --- the writer --------------------------------------------------------------------------

TEST(WriteFile, NewAndExistingRegularFilesAreReplacedWholeWithNoTmpLeft) {
  ScratchDir dir;
  const std::string path = dir.file("out.json");
  write_file(path, "first\n");
  EXPECT_EQ(read_file(path), "first\n");
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  struct stat before {};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);

  write_file(path, "second, longer\n");
  EXPECT_EQ(read_file(path), "second, longer\n");
  struct stat after {};
  ASSERT_EQ(::stat(path.c_str(), &after), 0);
  EXPECT_TRUE(S_ISREG(after.st_mode));
  EXPECT_NE(after.st_ino, before.st_ino) << "renamed over, not rewritten in place";
  EXPECT_EQ(after.st_mode & 07777, 0640u) << "the file's permissions stay";
  EXPECT_TRUE(temporaries_of(path).empty());

  write_file(path, "");  // an empty file is a file too
  EXPECT_EQ(read_file(path), "");
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) names.push_back(e.path().filename());
  EXPECT_EQ(names, std::vector<std::string>{"out.json"});
}

// Two runs writing the same file at once: each temporary is its own, so a
// reader only ever sees one writer's whole text, never a mix or half of one,
// and neither writer fails.
TEST(WriteFile, WritersAtOnceEachReplaceTheFileWhole) {
  ScratchDir dir;
  const std::string path = dir.file("out.json");
  std::vector<std::string> texts;
  for (char c = 'a'; c < 'a' + 4; ++c) texts.push_back(std::string(256 << 10, c) + "\n");
  write_file(path, texts[0]);
  std::atomic<bool> done{false};
  std::atomic<int> torn{0}, failed{0};
  std::thread reader([&] {
    while (!done) {
      const std::string got = read_file(path);
      if (std::find(texts.begin(), texts.end(), got) == texts.end()) ++torn;
    }
  });
  std::vector<std::thread> writers;
  for (const std::string& text : texts)
    writers.emplace_back([&, text] {
      for (int i = 0; i < 25; ++i) {
        if (!error_of([&] { write_file(path, text); }).empty()) ++failed;
      }
    });
  for (std::thread& w : writers) w.join();
  done = true;
  reader.join();
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(torn, 0) << "a reader saw a file that was not one writer's whole text";
  EXPECT_NE(std::find(texts.begin(), texts.end(), read_file(path)), texts.end());
  EXPECT_TRUE(temporaries_of(path).empty());
}

// A stale temporary left by a run that was killed is none of ours: it is
// neither renamed into place nor in the way.
TEST(WriteFile, AStaleTemporaryIsNotRenamedIntoPlace) {
  ScratchDir dir;
  const std::string path = dir.file("out.json");
  dir.write("out.json.tmp", "half a file from a run that was killed");
  write_file(path, "whole\n");
  EXPECT_EQ(read_file(path), "whole\n");
  EXPECT_EQ(temporaries_of(path), std::vector<std::string>{dir.file("out.json.tmp")});
}

TEST(WriteFile, ALinkStaysALinkAndTheFileItNamesIsReplaced) {
  ScratchDir dir;
  const std::string target = dir.write("target.json", "old\n");
  const std::string link = dir.file("link.json");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  write_file(link, "new\n");
  EXPECT_EQ(file_type(link), static_cast<mode_t>(S_IFLNK));
  EXPECT_EQ(read_file(target), "new\n");
  EXPECT_TRUE(temporaries_of(link).empty());
  EXPECT_TRUE(temporaries_of(target).empty());
}

TEST(WriteFile, AVanishedDirectoryIsOneErrorNamingTheFile) {
  ScratchDir dir;
  const std::string sub = dir.file("sub");
  ASSERT_EQ(::mkdir(sub.c_str(), 0700), 0);
  ASSERT_EQ(::rmdir(sub.c_str()), 0);  // checked up front, gone by the time the run ends
  const std::string path = sub + "/out.json";
  EXPECT_EQ(error_of([&] { write_file(path, "{}\n"); }), expected_error(path, ENOENT));
  EXPECT_TRUE(dir.empty());
}

TEST(WriteFile, ADirectoryIsOneErrorNamingIt) {
  ScratchDir dir;
  EXPECT_EQ(error_of([&] { write_file(dir.path(), "{}\n"); }), expected_error(dir.path(), EISDIR));
  EXPECT_TRUE(dir.empty());
}

// A write that fails half way (here: past the file size limit, EFBIG) leaves
// the old file as it was and no temporary.
TEST(WriteFile, AFailureHalfWayLeavesTheOldFileAndNoTmp) {
  ScratchDir dir;
  const std::string path = dir.write("out.json", "the old, complete file\n");
  struct rlimit old_limit {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  struct sigaction ignore {}, old_action {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGXFSZ, &ignore, &old_action), 0);
  struct rlimit small = old_limit;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string msg = error_of([&] { write_file(path, std::string(64 << 10, 'x')); });
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::sigaction(SIGXFSZ, &old_action, nullptr);
  EXPECT_EQ(msg, expected_error(path, EFBIG));
  EXPECT_EQ(read_file(path), "the old, complete file\n");
  EXPECT_TRUE(temporaries_of(path).empty());
}

TEST(WriteFile, AFullDiskIsOneErrorNamingTheFileAndTheDeviceStays) {
  ScratchDir dir;
  std::string why;
  const std::string full = make_full_device(dir, &why);
  if (full.empty()) GTEST_SKIP() << why;
  EXPECT_EQ(error_of([&] { write_file(full, "{}\n"); }), expected_error(full, ENOSPC));
  EXPECT_TRUE(is_full_device(full)) << "the device node was replaced";
  EXPECT_TRUE(temporaries_of(full).empty());
}

// A character device that takes what it is given (/dev/null, 1:3): written
// in place, and still that device afterwards, not a file put in its stead.
TEST(WriteFile, ACharacterDeviceIsWrittenInPlaceAndStaysADevice) {
  ScratchDir dir;
  std::string why;
  const std::string null = make_char_device(dir, "null", 1, 3, "/dev/null", &why);
  if (null.empty()) GTEST_SKIP() << why;
  EXPECT_NO_THROW(write_file(null, std::string(1 << 20, 'x')));
  struct stat st {};
  ASSERT_EQ(::lstat(null.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  EXPECT_TRUE(temporaries_of(null).empty());
}

// /dev/stdout when stdout is a pipe (`train_mlp --trace /dev/stdout | jq`):
// the text goes down that pipe; /dev/stdout stays the link it is.
TEST(WriteFile, DevStdoutIntoAPipeIsWrittenThroughIt) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::fflush(stdout);
  const int saved = ::dup(1);
  ASSERT_GE(saved, 0);
  ASSERT_EQ(::dup2(fds[1], 1), 1);
  ::close(fds[1]);
  const std::string msg = error_of([] { write_file("/dev/stdout", "{\"to\": \"stdout\"}\n"); });
  std::fflush(stdout);
  ::dup2(saved, 1);  // the pipe's last write end closes: the read below ends
  ::close(saved);
  std::string got;
  char buf[256];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  EXPECT_EQ(msg, "");
  EXPECT_EQ(got, "{\"to\": \"stdout\"}\n");
  EXPECT_EQ(file_type("/dev/stdout"), static_cast<mode_t>(S_IFLNK));
}

TEST(WriteFile, AFifoIsWrittenInPlaceAndStaysAFifo) {
  ScratchDir dir;
  const std::string fifo = make_fifo(dir, "pipe");
  std::string content;
  for (int i = 0; content.size() < (1u << 20); ++i) content += "line " + std::to_string(i) + "\n";  // > a pipe's buffer
  FifoReader reader(fifo);
  write_file(fifo, content);
  EXPECT_EQ(reader.text(), content);
  EXPECT_EQ(file_type(fifo), static_cast<mode_t>(S_IFIFO));
  EXPECT_TRUE(temporaries_of(fifo).empty());
}

// A reader that goes away (`| head`) is a write error, not a SIGPIPE that
// kills the process; and no SIGPIPE is left pending afterwards.
TEST(WriteFile, AReaderThatWentAwayIsOneErrorNotAKill) {
  ScratchDir dir;
  const std::string fifo = make_fifo(dir, "pipe");
  std::thread reader([&] {
    const int fd = ::open(fifo.c_str(), O_RDONLY);
    if (fd >= 0) ::close(fd);
  });
  const std::string msg = error_of([&] { write_file(fifo, std::string(1 << 20, 'x')); });
  reader.join();
  EXPECT_EQ(msg, expected_error(fifo, EPIPE));
  sigset_t pending;
  sigemptyset(&pending);
  ASSERT_EQ(::sigpending(&pending), 0);
  EXPECT_FALSE(sigismember(&pending, SIGPIPE));
  EXPECT_EQ(file_type(fifo), static_cast<mode_t>(S_IFIFO));
}

// --- every writer of whole files reports a full disk the same way -------------------------

struct Writer {
  const char* name;
  void (*write)(const std::string& path);
};

class FullDisk : public ::testing::TestWithParam<Writer> {};

TEST_P(FullDisk, OneErrorNamingTheFileAndTheDeviceStays) {
  ScratchDir dir;
  std::string why;
  const std::string full = make_full_device(dir, &why);
  if (full.empty()) GTEST_SKIP() << why;
  const std::string msg = error_of([&] { GetParam().write(full); });
  EXPECT_NE(msg.find("'" + full + "'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::strerror(ENOSPC)), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_TRUE(is_full_device(full)) << "the device node was replaced";
  EXPECT_TRUE(temporaries_of(full).empty());
}

INSTANTIATE_TEST_SUITE_P(
    Writers, FullDisk,
    ::testing::Values(Writer{"write_file", [](const std::string& p) { write_file(p, "{}\n"); }},
                      Writer{"trace",
                             [](const std::string& p) {
                               trace::start();
                               trace::span(trace::frontend_track(), "op", 1, 2, 1);
                               trace::stop_and_write(p);
                             }},
                      Writer{"summary_json",
                             [](const std::string& p) { train::write_summary_json(p, {train::RunResult{}}); }},
                      Writer{"memory_log",  // streamed, not written whole: each row checked as it goes
                             [](const std::string& p) {
                               train::MemoryLog log(p);
                               log.write(train::BatchSample{});
                             }}),
    [](const ::testing::TestParamInfo<Writer>& info) { return std::string(info.param.name); });

// --- the trace, parsed back -----------------------------------------------------------------

// Records a little of everything: an enqueue span, a counter, and a track
// whose name needs escaping.
void record_some_trace() {
  static const int odd = trace::register_track("queue \"odd\\name\"\n\t");
  trace::start();
  trace::span(trace::frontend_track(), "matmul", 10, 15, /*seq=*/7);
  trace::span(odd, "relu", 16, 20, /*seq=*/8);
  trace::counter("queue depth cpu:0", 12, 3.5);
}

void expect_trace(const nlohmann::json& t) {
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t.at("displayTimeUnit"), "ms");
  const nlohmann::json& events = t.at("traceEvents");
  ASSERT_TRUE(events.is_array());
  std::map<int, std::string> names;
  std::map<int, int> sort_index;
  int frontend = -1, odd = -1, spans = 0, counters = 0;
  for (const nlohmann::json& e : events) {
    const std::string ph = e.at("ph");
    EXPECT_EQ(e.at("pid"), 1);
    if (ph == "M" && e.at("name") == "thread_name") names[e.at("tid").get<int>()] = e.at("args").at("name");
    if (ph == "M" && e.at("name") == "thread_sort_index")
      sort_index[e.at("tid").get<int>()] = e.at("args").at("sort_index").get<int>();
    EXPECT_TRUE(ph == "M" || ph == "X" || ph == "C") << e;
  }
  for (const auto& [tid, name] : names) {
    if (name == "frontend (enqueue)") frontend = tid;
    if (name == "queue \"odd\\name\"\n\t") odd = tid;  // escaped and read back exactly
    EXPECT_TRUE(sort_index.count(tid)) << name;
  }
  ASSERT_GE(frontend, 1);
  ASSERT_GE(odd, 1);
  EXPECT_EQ(sort_index[frontend], 0) << "the frontend's track first";
  EXPECT_GT(sort_index[odd], 0);
  for (const nlohmann::json& e : events) {
    if (e.at("ph") == "X" && e.at("name") == "matmul") {
      ++spans;
      EXPECT_EQ(e.at("tid"), frontend);
      EXPECT_EQ(e.at("ts"), 10);
      EXPECT_EQ(e.at("dur"), 5);
      EXPECT_EQ(e.at("args").at("seq"), 7);
    }
    if (e.at("ph") == "X" && e.at("name") == "relu") {
      ++spans;
      EXPECT_EQ(e.at("tid"), odd);
      EXPECT_EQ(e.at("args").at("seq"), 8);
    }
    if (e.at("ph") == "C") {
      ++counters;
      EXPECT_EQ(e.at("name"), "queue depth cpu:0");
      EXPECT_EQ(e.at("ts"), 12);
      EXPECT_EQ(e.at("args").at("value"), 3.5);
    }
  }
  EXPECT_EQ(spans, 2);
  EXPECT_EQ(counters, 1);
}

TEST(TraceFile, IsChromeTraceJsonReadBackWithNlohmann) {
  ScratchDir dir;
  record_some_trace();
  trace::stop_and_write(dir.file("t.json"));
  EXPECT_FALSE(trace::enabled());
  expect_trace(read_json(dir.file("t.json")));
  EXPECT_TRUE(temporaries_of(dir.file("t.json")).empty());
}

TEST(TraceFile, GoesIntoAFifo) {
  ScratchDir dir;
  const std::string fifo = make_fifo(dir, "trace.pipe");
  record_some_trace();
  FifoReader reader(fifo);
  trace::stop_and_write(fifo);
  expect_trace(nlohmann::json::parse(reader.text()));
  EXPECT_EQ(file_type(fifo), static_cast<mode_t>(S_IFIFO));
}

// --- the run summary, parsed back -------------------------------------------------------

std::vector<train::RunResult> some_runs() {
  train::RunResult a;
  a.asked.sync = {train::SyncPolicy::Never, 0};  // mode "none"
  a.asked.label = "label \"quoted\"\\";
  a.device = "cpu:0";
  a.asked.batches = 3;
  a.asked.batch_size = 16;
  a.wall_s = 0.25;
  a.mem_increase_bytes = size_t(3) << 40;  // past 32 bits
  a.peak_queue_depth = 42;
  a.final_loss = 0.5;
  a.batches_done = 3;
  a.memory_limit_bytes = size_t(5) << 30;
  a.memory_limit_source = "MemAvailable at start, less a 10% margin";
  a.asked.alloc = AllocPolicy::Run;
  a.asked.data_queue = true;
  a.data_bytes_per_batch = 4096;
  a.peak_data_ahead_bytes = 10240;
  a.peak_data_lead_batches = 2.5;
  a.working_set_bytes = 8192;
  train::RunResult b = a;
  b.asked.alloc = AllocPolicy::Enqueue;
  b.asked.data_queue = false;
  b.asked.sync = {train::SyncPolicy::EveryBatch, 1};  // mode "batch"
  b.final_loss = std::numeric_limits<double>::quiet_NaN();  // a run that diverged
  b.status = train::RunStatus::Failed;
  b.error = "run 'batch' failed at batch 2 of 3: out of memory";
  b.batches_done = 1;
  b.memory_limit_bytes = 0;
  b.memory_limit_source = "none";
  return {a, b};
}

void expect_summary(const nlohmann::json& s) {
  ASSERT_TRUE(s.is_array());
  ASSERT_EQ(s.size(), 2u);
  const char* keys[] = {"mode",
                        "label",
                        "device",
                        "batches",
                        "batch_size",
                        "wall_s",
                        "samples_per_s",
                        "mem_increase_bytes",
                        "rss_increase_bytes",
                        "peak_queue_depth",
                        "peak_backlog_batches",
                        "peak_backlog_bytes",
                        "bytes_per_batch",
                        "predicted_increase_bytes",
                        "largest_tensor_bytes",
                        "alloc_policy",
                        "data_queue",
                        "data_bytes_per_batch",
                        "peak_data_ahead_bytes",
                        "peak_data_lead_batches",
                        "working_set_bytes",
                        "start_bytes",
                        "peak_bytes",
                        "end_bytes",
                        "start_rss_bytes",
                        "peak_rss_bytes",
                        "end_rss_bytes",
                        "max_pending_ops",
                        "max_pending_bytes",
                        "sync_auto",
                        "final_loss",
                        "status",
                        "failed",
                        "interrupted",
                        "error",
                        "batches_done",
                        "memory_limit_bytes",
                        "memory_limit_source",
                        "minor_faults",
                        "minor_faults_per_batch",
                        "minor_faults_steady_per_batch",
                        "host_work_s",
                        "host_work_kind",
                        "host_s_per_batch",
                        "device_s_per_batch",
                        "model_every",
                        "predicted_wall_s",
                        "data_parallel",
                        "blas_threads",
                        "devices",
                        "device_allocs",
                        "ops_per_batch",
                        "fresh_bytes",
                        "fresh_s_per_gib",
                        "fresh_s",
                        "fresh_counted",
                        "d_measured",
                        "d_kernels_s",
                        "d_fresh_s",
                        "d_rest_s",
                        "fresh_worker_s",
                        "fresh_worker_populate_s",
                        "fresh_backed_bytes",
                        "fresh_populator_s",
                        "fresh_populator_bytes",
                        "distributed",
                        "ranks",
                        "comm_alpha_s",
                        "comm_beta_s_per_byte",
                        "comm_exposed_s_per_batch",
                        "graph"};
  for (const nlohmann::json& run : s) {
    EXPECT_EQ(run.size(), std::size(keys));
    for (const char* key : keys) EXPECT_TRUE(run.contains(key)) << key;
  }
  EXPECT_EQ(s[0].at("mode"), "none");
  EXPECT_EQ(s[0].at("label"), "label \"quoted\"\\");
  EXPECT_FALSE(s[0].at("distributed").get<bool>());  // one process: no ranks
  EXPECT_TRUE(s[0].at("ranks").empty());
  EXPECT_EQ(s[0].at("batches"), 3);
  EXPECT_EQ(s[0].at("wall_s"), 0.25);
  EXPECT_EQ(s[0].at("mem_increase_bytes").get<uint64_t>(), uint64_t(3) << 40);
  EXPECT_EQ(s[0].at("peak_queue_depth"), 42);
  EXPECT_EQ(s[0].at("final_loss"), 0.5);
  EXPECT_EQ(s[0].at("status"), "completed");
  EXPECT_EQ(s[0].at("failed"), false);
  EXPECT_EQ(s[0].at("interrupted"), false);
  EXPECT_TRUE(s[0].at("error").is_null());
  EXPECT_EQ(s[0].at("memory_limit_bytes").get<uint64_t>(), uint64_t(5) << 30);
  EXPECT_EQ(s[0].at("memory_limit_source"), "MemAvailable at start, less a 10% margin");
  EXPECT_EQ(s[0].at("alloc_policy"), "run");
  EXPECT_EQ(s[0].at("data_queue"), true);
  EXPECT_EQ(s[0].at("data_bytes_per_batch"), 4096);
  EXPECT_EQ(s[0].at("peak_data_ahead_bytes"), 10240);
  EXPECT_EQ(s[0].at("peak_data_lead_batches"), 2.5);
  EXPECT_EQ(s[0].at("working_set_bytes"), 8192);
  EXPECT_TRUE(s[0].at("graph").is_null()) << "no step graphs: no verdicts";
  EXPECT_EQ(s[1].at("alloc_policy"), "enqueue");
  EXPECT_EQ(s[1].at("data_queue"), false);
  EXPECT_EQ(s[1].at("mode"), "batch");
  EXPECT_TRUE(s[1].at("final_loss").is_null()) << "JSON has no NaN";
  EXPECT_EQ(s[1].at("status"), "failed");
  EXPECT_EQ(s[1].at("failed"), true);
  EXPECT_EQ(s[1].at("error"), "run 'batch' failed at batch 2 of 3: out of memory");
  EXPECT_EQ(s[1].at("batches_done"), 1);
  EXPECT_TRUE(s[1].at("memory_limit_bytes").is_null()) << "no limit";
  EXPECT_EQ(s[1].at("memory_limit_source"), "none");
}

TEST(SummaryJsonFile, HasEveryKeyReadBackWithNlohmann) {
  ScratchDir dir;
  train::write_summary_json(dir.file("s.json"), some_runs());
  expect_summary(read_json(dir.file("s.json")));
  EXPECT_TRUE(temporaries_of(dir.file("s.json")).empty());
}

TEST(SummaryJsonFile, GoesIntoAFifo) {
  ScratchDir dir;
  const std::string fifo = make_fifo(dir, "summary.pipe");
  FifoReader reader(fifo);
  train::write_summary_json(fifo, some_runs());
  expect_summary(nlohmann::json::parse(reader.text()));
  EXPECT_EQ(file_type(fifo), static_cast<mode_t>(S_IFIFO));
}

}  // namespace
}  // namespace amlp
