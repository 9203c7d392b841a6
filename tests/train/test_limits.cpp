// Covers the programs' side of framework/cpu/blas_room.cpp,
// framework/core/memory/address_space.cpp and host_memory.cpp (the budget under
// ulimit -v) and of framework/util/env.cpp: train_mlp and async_demo under an
// address-space limit, each run in a child shell with `ulimit -v` and a
// timeout this test enforces; train_mlp under a library switch of the
// environment set to a value it does not take.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "framework/device.h"
#include "sanitized.h"
#include "train/train_test_util.h"

namespace amlp::testing {
namespace {

constexpr long kMiB = 1024;  // ulimit -v counts KiB

// `program args` under `ulimit -v kib`, killed past 60 s (an endless retry
// inside OpenBLAS would spin until then: the test fails on exit 137). Two
// OpenBLAS threads whatever the machine's cores, so the limits below mean
// the same everywhere.
Ran under_limit(long kib, const std::string& program, const std::string& args, int blas_threads = 2) {
  return run_command("OPENBLAS_NUM_THREADS=" + std::to_string(blas_threads) + " bash -c 'ulimit -v " +
                     std::to_string(kib) + "; exec timeout -s KILL 60 " + program_path(program) + " " + args + "'");
}

// The KiB of each "(ulimit -v N)" in a refusal, in order.
std::vector<long> suggested_limits(const std::string& err) {
  std::vector<long> out;
  const std::string key = "(ulimit -v ";
  for (size_t at = err.find(key); at != std::string::npos; at = err.find(key, at + 1))
    out.push_back(std::stol(err.substr(at + key.size())));
  return out;
}

// How a run under a limit may end: it ran (0); it failed with the one-line
// out-of-memory message (1); it could not start and said so in one line (1).
// A CUDA build the same: it maps cuBLAS and the rest (about 1 GB) only when
// a GPU first needs them (cuda/libraries.h).
void expect_a_clean_end(const Ran& r, const std::string& what) {
  ASSERT_TRUE(r.code == 0 || r.code == 1) << what << ": exit " << r.code << " (137: killed at the timeout)\n" << r.err;
  if (r.code == 0) return;
  EXPECT_EQ(r.err_lines(), 1u) << what << ":\n" << r.err;
  const bool oom = r.err.find("out of memory on cpu:") != std::string::npos;
  const bool refused = r.err.find("the address-space limit leaves no room to start") != std::string::npos;
  EXPECT_TRUE(oom || refused) << what << ":\n" << r.err;
  EXPECT_EQ(r.err.find("set_memory_limit"), std::string::npos) << what << ": the API's name, not this program's:\n" << r.err;
}

// ASan and TSan reserve terabytes of shadow address space at start, so no
// address-space limit leaves their builds room to start at all: these run in
// the release build (the test command's first build).
constexpr const char* kNoLimitsUnderSanitizers =
    "a sanitizer build reserves terabytes of shadow address space: ulimit -v cannot apply (the release build runs it)";

// From too small to start to comfortable: every limit ends cleanly, fast,
// and the sweep crosses from refusals to runs. Before (db84c1d..06ed51d, two
// cores): train_mlp hung at 64, 128, 256, 320 and 390 MiB, spinning in
// OpenBLAS's blas_memory_alloc (a buffer for its worker, or for OpenBLAS's
// own thread at load, which exit then waits for), and at 192 MiB failed to
// start a thread; async_demo hung at 128 to 640 MiB, at 640 after printing
// its out-of-memory line.
TEST(UnderUlimitV, EveryLimitEndsInARunOrOneLine) {
  if (kSanitized) GTEST_SKIP() << kNoLimitsUnderSanitizers;
  const std::vector<long> limits = {64, 128, 192, 256, 320, 390, 430, 470, 512, 640, 768, 1024, 1536, 2048, 3072};
  int ran = 0, refused = 0;
  for (long mib : limits) {
    const Ran t = under_limit(mib * kMiB, "train_mlp", "--config " + source_file("configs/quick.ini") +
                                                          " --device cpu --quiet --batches 5");
    expect_a_clean_end(t, "train_mlp under ulimit -v " + std::to_string(mib * kMiB));
    ran += t.code == 0;
    refused += t.code == 1;
  }
  // async_demo's data-parallel and devices run two CPU devices' GEMMs at once:
  // each may need a buffer, and each pool has the whole budget.
  for (long mib : {128, 390, 470, 512, 640, 768, 1024}) {
    const Ran d = under_limit(mib * kMiB, "async_demo", "all --device cpu --size 64 --repeats 1 --ops 200");
    expect_a_clean_end(d, "async_demo under ulimit -v " + std::to_string(mib * kMiB));
  }
  EXPECT_GT(ran, 0) << "no limit was enough for a run";
  EXPECT_GT(refused, 0) << "no limit was too small";
}

// Too small to start: one line naming the limit, what a run needs and the
// limit to ask for; nothing on stdout. A CUDA build the same: cuBLAS and
// the rest are opened on a GPU's first use (cuda/libraries.h), not at start.
TEST(UnderUlimitV, TooSmallToStartIsOneLineNamingTheLimitToAskFor) {
  if (kSanitized) GTEST_SKIP() << kNoLimitsUnderSanitizers;
  const Ran r = under_limit(200 * kMiB, "train_mlp", "--device cpu --batches 2 --batch-size 8 --hidden 4");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("train_mlp: error: the address-space limit leaves no room to start: RLIMIT_AS (ulimit -v) "
                        "is 200.0 MiB, the program and its libraries map ", 0),
            0u)
      << r.err;
  EXPECT_NE(r.err.find("raise it to at least "), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

// The limits a refusal suggests are ones the same run then works at: the
// first with the OpenBLAS threads it had, the second with one. Before, the
// figures counted start-up and OpenBLAS's room only, and the run failed at
// its first batch there ("raise it to at least 471.7 MiB (ulimit -v 482996)":
// out of memory at batch 1; async_demo's 478420 the same).
TEST(UnderUlimitV, TheLimitsARefusalSuggestsAreOnesTheSameRunWorksAt) {
  if (kSanitized) GTEST_SKIP() << kNoLimitsUnderSanitizers;
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"train_mlp", "--config " + source_file("configs/quick.ini") + " --device cpu --quiet --batches 5"},
      {"async_demo", "all --device cpu --size 64 --repeats 1 --ops 200"},
  };
  for (const auto& [program, args] : runs) {
    const Ran refused = under_limit(200 * kMiB, program, args);
    ASSERT_EQ(refused.code, 1) << program << "\n" << refused.err;
    ASSERT_NE(refused.err.find("the address-space limit leaves no room to start"), std::string::npos) << refused.err;
    const std::vector<long> kib = suggested_limits(refused.err);
    ASSERT_EQ(kib.size(), 2u) << "two threads' figure, then one's:\n" << refused.err;
    EXPECT_NE(refused.err.find("with OPENBLAS_NUM_THREADS=1"), std::string::npos) << refused.err;
    for (const auto& [limit, threads] : {std::pair<long, int>{kib[0], 2}, {kib[1], 1}}) {
      const Ran r = under_limit(limit, program, args, threads);
      EXPECT_EQ(r.code, 0) << program << " at the suggested ulimit -v " << limit << " with " << threads
                           << " OpenBLAS threads:\n" << r.err;
    }
  }
}

// The figure counts the model and a batch from --batch-size, --features and
// --hidden: a run whose tensors need far more than the 64 MiB assumed
// otherwise works at the limit its refusal suggests (before: 656.9 MiB was
// suggested here, and the run failed at batch 1, out of memory).
TEST(UnderUlimitV, TheLimitARefusalSuggestsHoldsTheModelsTensors) {
  if (kSanitized) GTEST_SKIP() << kNoLimitsUnderSanitizers;
  const std::string args = "--device cpu --quiet --batches 1 --batch-size 4096 --features 2048 --hidden 4096";
  const Ran refused = under_limit(200 * kMiB, "train_mlp", args);
  ASSERT_EQ(refused.code, 1) << refused.err;
  const std::vector<long> kib = suggested_limits(refused.err);
  ASSERT_FALSE(kib.empty()) << refused.err;
  const Ran r = under_limit(kib[0], "train_mlp", args);
  EXPECT_EQ(r.code, 0) << "at the suggested ulimit -v " << kib[0] << ":\n" << r.err;
}

// A run that outgrows what the limit leaves ends in the one-line
// out-of-memory message naming RLIMIT_AS, at the pool's budget, before the
// address space is full: OpenBLAS keeps the room for its buffers.
TEST(UnderUlimitV, OutgrowingTheLimitIsTheOneLineOutOfMemoryNamingIt) {
  if (kSanitized) GTEST_SKIP() << kNoLimitsUnderSanitizers;
  const long mib = 1024;
  const Ran r = under_limit(mib * kMiB, "train_mlp", "--config " + source_file("configs/quick.ini") +
                                                         " --device cpu --quiet --sync none --batch-size 4096 --batches 200");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_NE(r.err.find("train_mlp: error: run 'none' failed at batch "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("out of memory on cpu:0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("RLIMIT_AS (ulimit -v) of " + std::to_string(mib) + ".0 MiB"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the queued batches outgrew it"), std::string::npos) << r.err;
  // The advice names the limit that bound, ulimit -v's, and this program's
  // option (--memory-limit gives the pools less), not the API's set_memory_limit;
  // raising --memory-limit (not set) would not help.
  EXPECT_TRUE(r.err.find("raise the limit, or give the pools less memory (--memory-limit)") != std::string::npos ||
              r.err.find("or raise the address-space limit it names") != std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("raise --memory-limit"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("set_memory_limit"), std::string::npos) << r.err;
}

// One line naming the variable and its value, status 2 (bad input, found by
// check_environment() before the run), and no batch runs: garbage never means
// on, and "0" always means off.
TEST(TrainMlpEnvironment, ASwitchSetToAnythingButZeroOrOneStopsTheRun) {
  for (const char* env : {"ASYNCMLP_BLOCKING=garbage", "ASYNCMLP_POPULATOR_NORMAL=true", "ASYNCMLP_SEGMENTS=no",
                          "ASYNCMLP_LT=on"}) {
    const std::string name(env, std::string(env).find('='));
    const std::string value = std::string(env).substr(name.size() + 1);
    Ran r = run_command(std::string("env ") + env + " " + program_path("train_mlp") +
                        " --device cpu --batches 2 --batch-size 8 --hidden 4");
    EXPECT_EQ(r.code, 2) << env << ": exit " << r.code << "\n" << r.err;
    EXPECT_EQ(r.err, "train_mlp: error: environment variable " + name + " must be 0 or 1 (got '" + value + "')\n")
        << env;
    EXPECT_EQ(r.out.find("batch "), std::string::npos) << env << ": a batch ran\n" << r.out;
  }
  // 0 and 1 and empty still run.
  for (const char* env : {"ASYNCMLP_BLOCKING=1", "ASYNCMLP_POPULATOR_NORMAL=0", "ASYNCMLP_SEGMENTS=", "ASYNCMLP_LT=0"}) {
    Ran r = run_command(std::string("env ") + env + " " + program_path("train_mlp") +
                        " --device cpu --batches 2 --batch-size 8 --hidden 4 --quiet");
    EXPECT_EQ(r.code, 0) << env << ": " << r.err;
  }
}

}  // namespace
}  // namespace amlp::testing
