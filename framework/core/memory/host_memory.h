// host_memory.h — the host memory a CPU pool may take by default
// (host_memory_budget() in runtime.h), read from files a test can fake.
//
//   MemoryBudget b = detail::read_host_memory_budget("/proc", "/sys/fs/cgroup", detail::address_space_now());
//   b.bytes == the smallest of: min(cgroup limit, MemAvailable) less max(10%, 256 MiB), and
//              what RLIMIT_AS / RLIMIT_DATA leave less max(10%, kAddressReserveBytes); b.source says which
#pragma once
#include <cstddef>
#include <optional>
#include <string>

#include "framework/core/memory/address_space.h"
#include "framework/stats.h"

namespace amlp::detail {

constexpr size_t kHostMarginMin = size_t(256) << 20;  // the margin is 10%, at least this

// The tightest cgroup memory limit along this process's cgroup path, in
// bytes, and which file set it; nullopt when none is set (or readable).
// `proc` holds self/cgroup; `cgroup_root` is where cgroupfs is mounted (v2
// unified there; v1 controllers in its memory/ subfolder).
struct CgroupLimit {
  size_t bytes;
  std::string file;  // "cgroup v2 memory.max", "cgroup v1 memory.limit_in_bytes"
};
std::optional<CgroupLimit> read_cgroup_limit(const std::string& proc, const std::string& cgroup_root);

// MemAvailable from PROC/meminfo, in bytes; nullopt when unreadable.
std::optional<size_t> read_mem_available(const std::string& proc);

// The smaller of the two, less the margin; and where the address space is
// limited (`as`, read when the budget is: what was mapped then counts), what
// the limit leaves, less a margin of max(10%, kAddressReserveBytes) for what
// the process maps beside its pools (OpenBLAS's buffer above all: a pool that
// took its room would leave a GEMM without it). The smallest budget wins; a
// limit that leaves no more than the margin gives kNoRoomBytes, so the first
// allocation fails naming it.
constexpr size_t kNoRoomBytes = 1;
MemoryBudget read_host_memory_budget(const std::string& proc, const std::string& cgroup_root,
                                     const AddressSpace& as = {});

}  // namespace amlp::detail
