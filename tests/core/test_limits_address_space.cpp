// Covers framework/core/memory/address_space.cpp and framework/cpu/blas_room.cpp:
// the address-space limits and what is mapped against them, read from a fake
// /proc/self/status; the check at load (what it needs, the threads OpenBLAS
// would start, its one line); the check before a GEMM that may need a
// buffer of its own (more in flight than ever), on figures, on the count of
// GEMMs in flight, and in a child process under a real RLIMIT_AS, where
// OpenBLAS would otherwise retry its buffer's mapping for ever;
// set_blas_threads within the room.
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "framework/core/memory/address_space.h"
#include "framework/cpu/blas_room.h"
#include "test_util.h"

namespace amlp::testing {
namespace {

constexpr size_t MiB = size_t(1) << 20, GiB = size_t(1) << 30;

// A fake /proc whose self/status says `status`.
class FakeProc {
 public:
  explicit FakeProc(const std::string& status) {
    root_ = std::filesystem::temp_directory_path() / ("asyncmlp_limits." + std::to_string(::getpid()));
    std::filesystem::create_directories(root_ / "self");
    std::ofstream(root_ / "self" / "status") << status;
  }
  ~FakeProc() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  std::string path() const { return root_.string(); }

 private:
  std::filesystem::path root_;
};

TEST(AddressSpace, ReadsVmSizeAndVmDataFromStatus) {
  FakeProc p("Name:\ttrain_mlp\nVmPeak:\t  999999 kB\nVmSize:\t  189288 kB\nVmLck:\t       0 kB\n"
             "VmData:\t  140044 kB\nVmStk:\t     132 kB\n");
  const detail::AddressSpace a = detail::read_address_space(p.path().c_str(), 400000 * size_t(1024), detail::kUnlimited);
  EXPECT_EQ(a.vm_size, 189288 * size_t(1024));
  EXPECT_EQ(a.vm_data, 140044 * size_t(1024));
  EXPECT_TRUE(a.limited());
  EXPECT_EQ(a.left(), (400000 - 189288) * size_t(1024));
  EXPECT_FALSE(a.data_binds());
  EXPECT_EQ(a.describe(), "RLIMIT_AS (ulimit -v) of 390.6 MiB, 184.9 MiB of it mapped");
  // Unreadable: nothing counted as mapped.
  const detail::AddressSpace none = detail::read_address_space("/nonexistent", GiB, detail::kUnlimited);
  EXPECT_EQ(none.vm_size, 0u);
  EXPECT_EQ(none.left(), GiB);
}

TEST(AddressSpace, TheLimitThatLeavesLessBindsAndPastItLeavesNothing) {
  detail::AddressSpace a;
  EXPECT_FALSE(a.limited());
  EXPECT_EQ(a.left(), detail::kUnlimited);
  a.as_limit = 4 * GiB;
  a.vm_size = 3 * GiB;
  a.data_limit = 2 * GiB;
  a.vm_data = 1536 * MiB;
  EXPECT_EQ(a.left(), 512 * MiB);
  EXPECT_TRUE(a.data_binds());
  EXPECT_EQ(a.describe(), "RLIMIT_DATA (ulimit -d) of 2048.0 MiB, 1536.0 MiB of it mapped");
  a.vm_size = 5 * GiB;
  EXPECT_EQ(a.left(), 0u);
  EXPECT_FALSE(a.data_binds());
}

// This process: no limit under CTest, and nothing read then; under one, what
// /proc says.
TEST(AddressSpace, ThisProcessAsGetrlimitSaysIt) {
  struct rlimit as {}, data {};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &as), 0);
  ASSERT_EQ(getrlimit(RLIMIT_DATA, &data), 0);
  const detail::AddressSpace a = detail::address_space_now();
  EXPECT_EQ(a.limited(), as.rlim_cur != RLIM_INFINITY || data.rlim_cur != RLIM_INFINITY);
  if (!a.limited()) EXPECT_EQ(a.vm_size, 0u);
}

// The check at load: a limit that holds the start-up, OpenBLAS's threads
// (136 MiB each beyond the first), a GEMM's buffer and margin and 16 MiB for
// tensors fits; below, it refuses. What it suggests is more: the room the
// pools keep free for another GEMM's buffer and the run's tensors besides,
// and the OPENBLAS_NUM_THREADS it names is one at which that fits.
TEST(BlasRoomAtLoad, NeedsRoomForEveryOpenBlasThreadBesidesARun) {
  const size_t one = cpu::kLibraryStartBytes + detail::kAddressReserveBytes + cpu::kMinPoolBytes;
  EXPECT_EQ(one, 280 * MiB);
  cpu::LoadPlan p = cpu::plan_at_load(one + 3 * cpu::kBlasThreadBytes, 4);
  EXPECT_TRUE(p.fits);
  EXPECT_EQ(p.need, one + 3 * cpu::kBlasThreadBytes);
  EXPECT_EQ(p.advise_one, (8 + 256 + 144 + 64) * MiB);
  EXPECT_EQ(p.advise, p.advise_one + 3 * cpu::kBlasThreadBytes);
  p = cpu::plan_at_load(one + 3 * cpu::kBlasThreadBytes - 1, 4);
  EXPECT_FALSE(p.fits);
  EXPECT_EQ(p.threads_fit, 2) << "the run's room (advise) with 2 threads: 472 + 136 = 608 MiB of 688";
  p = cpu::plan_at_load(one + 3 * cpu::kBlasThreadBytes - 1, 4, 200 * MiB);
  EXPECT_EQ(p.threads_fit, 1) << "with 200 MiB of tensors: 608 MiB with one thread";
  EXPECT_EQ(p.advise_one, (8 + 256 + 144 + 200) * MiB);
  p = cpu::plan_at_load(one, 16);
  EXPECT_FALSE(p.fits);
  EXPECT_EQ(p.threads_fit, 0);
  p = cpu::plan_at_load(one - 1, 1);
  EXPECT_FALSE(p.fits);
  EXPECT_EQ(p.threads_fit, 0);
  EXPECT_TRUE(cpu::plan_at_load(one, 1).fits);
  EXPECT_EQ(cpu::plan_at_load(one, 1, 0).advise_one, (8 + 256 + 144 + 16) * MiB) << "at least kMinPoolBytes";
  EXPECT_TRUE(cpu::plan_at_load(detail::kUnlimited, 64).fits);
}

TEST(BlasRoomAtLoad, TheLineNamesTheLimitWhatItNeedsAndWhatWouldFit) {
  detail::AddressSpace a;
  a.as_limit = 400000 * size_t(1024);
  a.vm_size = 50000 * size_t(1024);
  const cpu::LoadPlan p = cpu::plan_at_load(a.left(), 2);
  ASSERT_FALSE(p.fits);
  EXPECT_EQ(cpu::refusal(a, p),
            "the address-space limit leaves no room to start: RLIMIT_AS (ulimit -v) is 390.6 MiB, the program and its "
            "libraries map 48.8 MiB, and a run needs 608.0 MiB more (OpenBLAS's 2 threads: 136.0 MiB for each beyond "
            "the first, its buffer and stack; 256.0 MiB for a GEMM's buffer, thread stacks and the heap; 144.0 MiB "
            "the pools keep free for another GEMM's buffer; 64.0 MiB for this run's tensors): raise it to at least "
            "656.8 MiB (ulimit -v 672592), or to 520.8 MiB (ulimit -v 533328) with OPENBLAS_NUM_THREADS=1");
  a.as_limit = 600 * MiB;
  const std::string fits_one = cpu::refusal(a, cpu::plan_at_load(a.left(), 4));
  EXPECT_NE(fits_one.find("or set OPENBLAS_NUM_THREADS=1, which fits"), std::string::npos) << fits_one;
  a.data_limit = 60 * MiB;
  a.vm_data = 50 * MiB;
  const std::string data = cpu::refusal(a, cpu::plan_at_load(a.left(), 1));
  EXPECT_NE(data.find("RLIMIT_DATA (ulimit -d) is 60.0 MiB"), std::string::npos) << data;
  EXPECT_NE(data.find("(ulimit -d 534528)"), std::string::npos) << data;
  EXPECT_EQ(data.find("OPENBLAS_NUM_THREADS"), std::string::npos) << data;
}

// As OpenBLAS counts its threads: OPENBLAS_NUM_THREADS, else
// GOTO_NUM_THREADS, else OMP_NUM_THREADS (the first positive), at most the
// cores; none: the cores.
TEST(BlasRoomAtLoad, CountsOpenBlasThreadsAsOpenBlasDoes) {
  const auto threads = [](std::vector<std::string> vars) {
    std::vector<char*> envp;
    for (std::string& v : vars) envp.push_back(v.data());
    envp.push_back(nullptr);
    return cpu::openblas_threads_at_load(envp.data());
  };
  const int cores = threads({});
  EXPECT_GE(cores, 1);
  EXPECT_EQ(threads({"OPENBLAS_NUM_THREADS=1"}), 1);
  EXPECT_EQ(threads({"OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=100000"}), cores);
  EXPECT_EQ(threads({"OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=0"}), 1);
  EXPECT_EQ(threads({"GOTO_NUM_THREADS=1", "OMP_NUM_THREADS=64"}), 1);
  EXPECT_EQ(threads({"OPENBLAS_NUM_THREADSX=1", "XOMP_NUM_THREADS=1"}), cores);
}

// A GEMM that may need a buffer of its own: room for it (and a little), or
// the reason, naming the limit.
TEST(BlasRoom, AGemmNeedsRoomForABufferOfItsOwn) {
  detail::AddressSpace a;
  EXPECT_EQ(cpu::blas_room_problem(a), "");
  a.as_limit = 1 * GiB;
  a.vm_size = 1 * GiB - 144 * MiB;
  EXPECT_EQ(cpu::blas_room_problem(a), "");
  a.vm_size += 1;
  const std::string why = cpu::blas_room_problem(a);
  EXPECT_NE(why.find("OpenBLAS maps a 128.0 MiB buffer for a GEMM that finds none free"), std::string::npos) << why;
  EXPECT_NE(why.find("RLIMIT_AS (ulimit -v) of 1024.0 MiB"), std::string::npos) << why;
  EXPECT_NE(why.find("would retry the mapping for ever"), std::string::npos) << why;
}

// OpenBLAS's buffers mapped so far: its anonymous read-write mappings of
// exactly 128 MiB (/proc/self/maps).
int openblas_buffers_mapped() {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);) {
    unsigned long long from = 0, to = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%llx-%llx %7s", &from, &to, perms) == 3 && to - from == cpu::kBlasBufferBytes &&
        std::string(perms) == "rw-p")
      ++n;
  }
  return n;
}

// RLIMIT_AS at what is mapped now plus `room` (a child's own), once
// OpenBLAS's server threads have mapped their buffers: they do as they start,
// in the background, and one that found no room would retry for ever (in a
// real run the check at load keeps room for them).
void limit_address_space_to(size_t room) {
  for (int i = 0; i < 1000 && openblas_buffers_mapped() < blas_threads() - 1; ++i) ::usleep(10000);
  std::ifstream status("/proc/self/status");
  size_t vm_kb = 0;
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmSize:", 0) == 0) vm_kb = std::stoull(line.substr(7));
  struct rlimit r {};
  r.rlim_cur = r.rlim_max = (vm_kb << 10) + room;
  if (setrlimit(RLIMIT_AS, &r) != 0) std::exit(4);
}

// A GEMM checks the room only when more are in flight than ever before: under
// a limit with no room for a buffer, one GEMM at a time after one ran before
// goes on (OpenBLAS hands it the free buffer); a second beside it is
// OutOfMemory. In a child, under a real RLIMIT_AS.
TEST(BlasRoomDeathTest, OnlyAGemmBeyondThePeakInFlightNeedsRoom) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto child = [] {
    { cpu::BlasCall first("cpu:0"); }  // no limit yet: room found, the peak is 1
    limit_address_space_to(64 * MiB);
    { cpu::BlasCall alone("cpu:0"); }  // within the peak: nothing checked
    cpu::BlasCall one("cpu:0");
    try {
      cpu::BlasCall two("cpu:1");  // beyond it: checked, no room
      std::exit(0);
    } catch (const OutOfMemory& e) {
      std::fprintf(stderr, "%s\n", e.what());
    }
    std::exit(3);
  };
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(3),
              "out of memory on cpu:1: requested 134217728 bytes \\(128 MiB\\) outside the pool: OpenBLAS maps");
}

// set_blas_threads never starts more server threads than the room holds
// beside the margin; fewer than have run already are always fine.
TEST(BlasRoom, NewOpenBlasThreadsOnlyAsTheRoomHolds) {
  detail::AddressSpace a;
  EXPECT_EQ(cpu::blas_threads_that_fit(64, 2, a), 64);
  a.as_limit = 2 * GiB;
  a.vm_size = 2 * GiB - detail::kAddressReserveBytes - 3 * cpu::kBlasThreadBytes;
  EXPECT_EQ(cpu::blas_threads_that_fit(8, 2, a), 5);
  EXPECT_EQ(cpu::blas_threads_that_fit(4, 2, a), 4);
  EXPECT_EQ(cpu::blas_threads_that_fit(1, 2, a), 1);
  a.vm_size = 2 * GiB;
  EXPECT_EQ(cpu::blas_threads_that_fit(8, 2, a), 2);
}

// The real thing, in a child: under an RLIMIT_AS with no room for another
// 128 MiB, the process's first GEMM fails with OutOfMemory naming the limit,
// where OpenBLAS alone would retry its mapping for ever (the alarm ends such
// a child, and the test fails). The child runs nothing but this test
// (threadsafe style), so no GEMM ran in it before.
TEST(BlasRoomDeathTest, AGemmWithoutRoomIsOutOfMemoryNotAnEndlessRetry) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto child = [] {
    ::alarm(20);
    const Device d = Device::cpu(7);
    Tensor a = full({256, 256}, 1.f, d), b = full({256, 256}, 1.f, d);  // past OpenBLAS's small-matrix path, which maps no buffer
    waitall();
    limit_address_space_to(64 * MiB);  // room for tensors, not for a GEMM buffer
    try {
      std::fprintf(stderr, "sum %g\n", double(sum(matmul(a, b)).item()));
      std::exit(0);
    } catch (const Error& e) {  // the kernel's failure, rethrown by the blocker (KernelError)
      std::fprintf(stderr, "%s\n", e.what());
    }
    std::exit(3);
  };
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(3),
              "out of memory on cpu:7: requested 134217728 bytes \\(128 MiB\\) outside the pool: OpenBLAS maps a "
              "128.0 MiB buffer for a GEMM that finds none free, and RLIMIT_AS \\(ulimit -v\\)");
}

// A CPU pool's fresh mapping under a limit leaves room for a GEMM's buffer
// (128 MiB and 16 MiB beside it), whatever its budget; past that, the reason,
// naming the limit.
TEST(BlasRoom, APoolMapsOnlyWhatLeavesAGemmItsBuffer) {
  detail::AddressSpace a;
  EXPECT_EQ(cpu::pool_mapping_problem(64 * GiB, a), "");
  a.as_limit = 1 * GiB;
  a.vm_size = 512 * MiB;
  EXPECT_EQ(cpu::pool_mapping_problem(512 * MiB - 144 * MiB, a), "");
  const std::string why = cpu::pool_mapping_problem(512 * MiB - 144 * MiB + 1, a);
  EXPECT_EQ(why, "RLIMIT_AS (ulimit -v) of 1024.0 MiB, 512.0 MiB of it mapped leaves 512.0 MiB, and 144.0 MiB of it "
                 "stays free for OpenBLAS's buffer (a GEMM that finds none free maps one, and would retry the mapping "
                 "for ever): raise the limit, or give the pools less memory (set_memory_limit)");
  a.vm_size = 1 * GiB - 100 * MiB;  // less than the room left already: nothing more
  EXPECT_NE(cpu::pool_mapping_problem(1, a), "");
}

// Two CPU pools, each with no budget of its own, under a real RLIMIT_AS in
// a child: the first fills the address space as far as it may, and the
// process's first GEMM, which maps OpenBLAS's buffer, still runs. Without the
// room kept, the pool would take it and the GEMM be OutOfMemory (or, had the
// pool grown between the GEMM's check and its mapping, spin for ever: the
// alarm ends such a child). The pool's failure names what the room is for.
TEST(BlasRoomDeathTest, PoolsFillingTheAddressSpaceLeaveAGemmItsBuffer) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto child = [] {
    ::alarm(30);
    const Device d5 = Device::cpu(5), d6 = Device::cpu(6);
    Tensor a = full({256, 256}, 1.f, d6), b = full({256, 256}, 1.f, d6);
    waitall();
    limit_address_space_to(512 * MiB);
    set_memory_limit(d5, 0, "none");
    std::vector<Tensor> held;
    try {
      for (int i = 0; i < 64; ++i) held.push_back(full({2048, 2048}, 0.f, d5));  // 16 MiB each
      std::exit(4);  // 1 GiB fitted in 512 MiB
    } catch (const OutOfMemory& e) {
      std::fprintf(stderr, "%s\n", e.what());
    }
    waitall();
    if (held.size() < 16) std::exit(5);  // the pool took far less than the room it had
    std::fprintf(stderr, "sum %g\n", double(sum(matmul(a, b)).item()));  // 256 * 256 * 256
    std::exit(3);
  };
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(3),
              "out of memory on cpu:5: requested 16777216 bytes .* \\(RLIMIT_AS \\(ulimit -v\\) of .* and 144.0 MiB "
              "of it stays free for OpenBLAS's buffer .*\n(.*\n)*sum 1.67772e\\+07");
}

// Under a limit, a GEMM that may map a buffer of its own holds the room
// until it ends, and a pool's fresh mapping waits for it: neither counts
// room the other is about to take. In a child, where no GEMM ran before.
TEST(BlasRoomDeathTest, APoolMappingWaitsForAGemmThatMayMapItsBuffer) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto child = [] {
    ::alarm(30);
    limit_address_space_to(1 * GiB);
    std::atomic<bool> mapped{false};
    std::thread pool;
    {
      cpu::BlasCall gemm("cpu:0");  // the first: beyond the peak, so it holds the room
      pool = std::thread([&] {
        Tensor t = empty({4096, 1024}, Device::cpu(4));  // 16 MiB: a mapping of its own
        waitall();
        mapped = true;
      });
      ::usleep(300000);
      if (mapped) std::exit(4);  // mapped while the GEMM held the room
    }
    pool.join();
    std::exit(mapped ? 3 : 5);
  };
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(3), "");
}

}  // namespace
}  // namespace amlp::testing
