// host_memory.h — the host memory a CPU pool may take by default
// (host_memory_budget() in runtime.h), read from files a test can fake.
//
//   MemoryBudget b = detail::read_host_memory_budget("/proc", "/sys/fs/cgroup");
//   b.bytes == min(cgroup limit, MemAvailable) less max(10%, 256 MiB); b.source says which
#pragma once
#include <cstddef>
#include <optional>
#include <string>

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

// The smaller of the two, less the margin.
MemoryBudget read_host_memory_budget(const std::string& proc, const std::string& cgroup_root);

}  // namespace amlp::detail
