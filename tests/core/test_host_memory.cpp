// Covers framework/core/memory/host_memory.cpp and framework/core/memory/memory.cpp (the pool's limit):
// the CPU pool's default budget (docs/design.md §3): the smaller of the
// cgroup's limit and MemAvailable, less a margin, read from fake /proc and
// cgroupfs trees, and no more than an address-space limit (RLIMIT_AS,
// RLIMIT_DATA) leaves, less its own margin; a fresh CPU pool starts with it;
// an allocation past a limit is a clean OutOfMemory naming the limit and its
// source, and the pool serves smaller requests afterwards.
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "framework/core/memory/host_memory.h"
#include "test_util.h"

namespace amlp::testing {
namespace {

constexpr size_t GiB = size_t(1) << 30, MiB = size_t(1) << 20;

// A fake /proc and /sys/fs/cgroup under a temporary directory.
class FakeMachine {
 public:
  FakeMachine() {
    root_ = std::filesystem::temp_directory_path() /
            ("asyncmlp_hostmem." + std::to_string(::getpid()) + "." + std::to_string(counter_++));
    std::filesystem::create_directories(root_ / "proc" / "self");
    std::filesystem::create_directories(root_ / "cg");
  }
  ~FakeMachine() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  void file(const std::string& rel, const std::string& text) {
    const auto p = root_ / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  void mem_available(size_t bytes) {
    file("proc/meminfo", "MemTotal:       99999999 kB\nMemFree:  1 kB\nMemAvailable:   " +
                             std::to_string(bytes / 1024) + " kB\nBuffers: 0 kB\n");
  }
  std::string proc() const { return (root_ / "proc").string(); }
  std::string cg() const { return (root_ / "cg").string(); }
  MemoryBudget budget(const detail::AddressSpace& as = {}) const {
    return detail::read_host_memory_budget(proc(), cg(), as);
  }

 private:
  static inline int counter_ = 0;
  std::filesystem::path root_;
};

TEST(HostMemoryBudget, MemAvailableLessTenPercentWhenNoCgroupLimit) {
  FakeMachine m;
  m.mem_available(20 * GiB);
  m.file("proc/self/cgroup", "0::/user.slice/job\n");
  m.file("cg/user.slice/job/memory.max", "max\n");
  m.file("cg/user.slice/memory.max", "max\n");
  const MemoryBudget b = m.budget();
  EXPECT_EQ(b.bytes, 20 * GiB - 2 * GiB);
  EXPECT_NE(b.source.find("MemAvailable"), std::string::npos) << b.source;
  EXPECT_NE(b.source.find("10%"), std::string::npos) << b.source;
}

// A cgroup v2 limit below MemAvailable binds: the budget is the limit less
// 10% or 256 MiB, whichever is more, wherever along the process's cgroup
// path the limit is set.
struct CgroupCase {
  const char* name;
  size_t mem_available;
  const char* proc_cgroup;                                 // /proc/self/cgroup
  std::vector<std::pair<std::string, size_t>> memory_max;  // cgroupfs path -> limit (0: "max")
  size_t expected;
};

class CgroupLimit : public ::testing::TestWithParam<CgroupCase> {};

TEST_P(CgroupLimit, BindsWhenBelowMemAvailable) {
  const CgroupCase& c = GetParam();
  FakeMachine m;
  m.mem_available(c.mem_available);
  m.file("proc/self/cgroup", c.proc_cgroup);
  for (const auto& [path, bytes] : c.memory_max) m.file(path, (bytes ? std::to_string(bytes) : "max") + "\n");
  const MemoryBudget b = m.budget();
  EXPECT_EQ(b.bytes, c.expected);
  EXPECT_NE(b.source.find("cgroup v2 memory.max"), std::string::npos) << b.source;
}

INSTANTIATE_TEST_SUITE_P(
    HostMemoryBudget, CgroupLimit,
    ::testing::Values(
        // 10% of 1 GiB is less than 256 MiB: the margin is 256 MiB.
        CgroupCase{"OwnLimitWithTheMarginAtLeast256MiB", 20 * GiB, "0::/user.slice/job\n",
                   {{"cg/user.slice/job/memory.max", GiB}}, GiB - 256 * MiB},
        // The parent's limit binds the child.
        CgroupCase{"TheTightestLimitAlongThePathCounts", 64 * GiB, "0::/a/b\n",
                   {{"cg/a/b/memory.max", 0}, {"cg/a/memory.max", 10 * GiB}}, 9 * GiB},
        // In a cgroup namespace the mount's root is the process's cgroup.
        CgroupCase{"InANamespaceTheMountRootIsTheProcessCgroup", 16 * GiB, "0::/\n",
                   {{"cg/memory.max", 2 * GiB}}, 2 * GiB - 256 * MiB}),
    [](const ::testing::TestParamInfo<CgroupCase>& i) { return std::string(i.param.name); });

TEST(HostMemoryBudget, MemAvailableWinsOverALargerCgroupLimit) {
  FakeMachine m;
  m.mem_available(4 * GiB);
  m.file("proc/self/cgroup", "0::/job\n");
  m.file("cg/job/memory.max", std::to_string(32 * GiB) + "\n");
  const MemoryBudget b = m.budget();
  EXPECT_EQ(b.bytes, 4 * GiB - 4 * GiB / 10);
  EXPECT_NE(b.source.find("MemAvailable"), std::string::npos) << b.source;
}

TEST(HostMemoryBudget, CgroupV1LimitInBytesAndItsUnlimitedValue) {
  FakeMachine m;
  m.mem_available(16 * GiB);
  m.file("proc/self/cgroup", "5:cpu,cpuacct:/\n4:memory:/docker/abc\n0::/\n");
  m.file("cg/memory/docker/abc/memory.limit_in_bytes", "9223372036854771712\n");  // v1's "no limit"
  m.file("cg/memory/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_NE(m.budget().source.find("MemAvailable"), std::string::npos);
  m.file("cg/memory/docker/abc/memory.limit_in_bytes", std::to_string(3 * GiB) + "\n");
  const MemoryBudget b = m.budget();
  EXPECT_EQ(b.bytes, 3 * GiB - 3 * GiB / 10);
  EXPECT_NE(b.source.find("cgroup v1 memory.limit_in_bytes"), std::string::npos) << b.source;
}

TEST(HostMemoryBudget, NothingReadableMeansNoLimit) {
  FakeMachine m;
  const MemoryBudget b = m.budget();
  EXPECT_EQ(b.bytes, 0u);
  EXPECT_NE(b.source.find("none"), std::string::npos) << b.source;
  detail::AddressSpace as;  // but a limit of the process's own still binds
  as.as_limit = 2 * GiB;
  EXPECT_EQ(m.budget(as).bytes, 2 * GiB - 256 * MiB);
}

// An address-space limit (ulimit -v): what it leaves beside what was mapped,
// less 10% or 256 MiB (the room OpenBLAS's buffer, the threads' stacks and the
// heap take beside the pool), whichever is more; it binds when it leaves less
// than the host's budget, and says so with its figures.
TEST(HostMemoryBudget, AnAddressSpaceLimitBindsWhenItLeavesLess) {
  FakeMachine m;
  m.mem_available(20 * GiB);
  detail::AddressSpace as;
  as.as_limit = 2 * GiB;
  as.vm_size = 200 * MiB;
  MemoryBudget b = m.budget(as);
  EXPECT_EQ(b.bytes, 2 * GiB - 200 * MiB - 256 * MiB);
  EXPECT_EQ(b.source,
            "RLIMIT_AS (ulimit -v) of 2048.0 MiB, 200.0 MiB of it mapped at start, less a 256.0 MiB margin for "
            "OpenBLAS's buffers, thread stacks and the heap");
  as.as_limit = 10 * GiB + 200 * MiB;  // 10 GiB left: the margin is 10%
  b = m.budget(as);
  EXPECT_EQ(b.bytes, 10 * GiB - GiB);
  EXPECT_NE(b.source.find("less a 10% margin"), std::string::npos) << b.source;
  as.as_limit = 64 * GiB;  // leaves more than MemAvailable: MemAvailable's budget
  b = m.budget(as);
  EXPECT_EQ(b.bytes, 18 * GiB);
  EXPECT_NE(b.source.find("MemAvailable"), std::string::npos) << b.source;
}

// RLIMIT_DATA counts the private writable mappings (VmData); of two limits,
// the one that leaves less binds.
TEST(HostMemoryBudget, RlimitDataCountsThePrivateWritableMappings) {
  FakeMachine m;
  m.mem_available(20 * GiB);
  detail::AddressSpace as;
  as.data_limit = GiB;
  as.vm_data = 100 * MiB;
  as.vm_size = 900 * MiB;  // not what RLIMIT_DATA counts
  MemoryBudget b = m.budget(as);
  EXPECT_EQ(b.bytes, GiB - 100 * MiB - 256 * MiB);
  EXPECT_NE(b.source.find("RLIMIT_DATA (ulimit -d) of 1024.0 MiB, 100.0 MiB of it mapped"), std::string::npos)
      << b.source;
  as.as_limit = 4 * GiB;
  as.vm_size = 3 * GiB + 512 * MiB;  // leaves 512 MiB, less than RLIMIT_DATA's 924
  b = m.budget(as);
  EXPECT_EQ(b.bytes, 256 * MiB);
  EXPECT_NE(b.source.find("RLIMIT_AS"), std::string::npos) << b.source;
}

// A limit that leaves no more than the margin: a budget of one byte, so the
// first allocation fails naming it, rather than taking OpenBLAS's room.
TEST(HostMemoryBudget, ALimitThatLeavesNoMoreThanItsMarginLeavesNoRoomForTensors) {
  FakeMachine m;
  m.mem_available(20 * GiB);
  detail::AddressSpace as;
  as.as_limit = 300 * MiB;
  as.vm_size = 100 * MiB;
  const MemoryBudget b = m.budget(as);
  EXPECT_EQ(b.bytes, detail::kNoRoomBytes);
  EXPECT_NE(b.source.find("no room left for tensors"), std::string::npos) << b.source;
  as.vm_size = 400 * MiB;  // past the limit already
  EXPECT_EQ(m.budget(as).bytes, detail::kNoRoomBytes);
}

// This machine's own budget: set, and below what the kernel says is available.
TEST(HostMemoryBudget, ThisMachineHasOneAndEveryFreshCpuPoolStartsWithIt) {
  const MemoryBudget b = host_memory_budget();
  const std::optional<size_t> avail = detail::read_mem_available("/proc");
  ASSERT_TRUE(avail.has_value()) << "no MemAvailable in /proc/meminfo";
  EXPECT_GT(b.bytes, 0u);
  EXPECT_LT(b.bytes, *avail + (size_t(1) << 30)) << "more than MemAvailable (give or take what changed since)";
  // cpu:5 is used by no other test in this binary: its pool is fresh.
  const MemoryBudget pool = memory_limit(Device::cpu(5));
  EXPECT_EQ(pool.bytes, b.bytes);
  EXPECT_EQ(pool.source, b.source);
  EXPECT_EQ(memory_stats(Device::cpu(5)).limit_bytes, b.bytes);
}

// Past the limit: OutOfMemory naming every figure and where the limit came
// from, nothing queued; smaller requests succeed afterwards, and the limit
// can be lifted.
TEST(PoolLimit, PastItIsACleanOutOfMemoryAndThePoolServesSmallerRequestsAfter) {
  const Device d = Device::cpu(6);
  const MemoryBudget before = memory_limit(d);
  waitall();
  empty_cache(d);
  set_memory_limit(d, 8 * MiB, "a test's limit");
  const uint64_t pushed = queue_stats(d).pushed;
  Tensor a = full({MiB / 4 * 5}, 1.f, d);  // 5 MiB, within
  try {
    Tensor b = full({MiB / 4 * 5}, 2.f, d);  // 5 more: past 8 MiB
    ADD_FAILURE() << "an allocation past the limit succeeded";
  } catch (const OutOfMemory& e) {
    EXPECT_EQ(e.requested, 5 * MiB);
    EXPECT_EQ(e.limit, 8 * MiB);
    EXPECT_EQ(e.in_use, 5 * MiB);
    EXPECT_EQ(e.limit_source, "a test's limit");
    const std::string w = e.what();
    for (const std::string& part : {std::to_string(5 * MiB) + " bytes", std::to_string(8 * MiB) + " bytes",
                                    std::string("a test's limit"), std::string("cpu:6")})
      EXPECT_NE(w.find(part), std::string::npos) << part << " not in: " << w;
  }
  EXPECT_EQ(queue_stats(d).pushed, pushed + 1) << "only the first fill was queued";
  EXPECT_EQ(memory_stats(d).bytes_in_use, 5 * MiB);
  Tensor c = full({MiB / 4}, 3.f, d);  // 1 MiB fits beside the first
  EXPECT_EQ(sum(c).item(), float(MiB / 4) * 3.f);
  EXPECT_EQ(sum(a).item(), float(MiB / 4 * 5));
  a = Tensor();
  c = Tensor();
  waitall();
  Tensor again = full({MiB / 4 * 7}, 1.f, d);  // 7 MiB: fits once the first is gone
  EXPECT_EQ(sum(again).item(), float(MiB / 4 * 7));
  again = Tensor();
  waitall();
  set_memory_limit(d, before.bytes, before.source);
  EXPECT_EQ(memory_limit(d).source, before.source);
}

}  // namespace
}  // namespace amlp::testing
