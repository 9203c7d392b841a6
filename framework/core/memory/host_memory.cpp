// host_memory.cpp — the default budget of a CPU pool (host_memory.h).
#include "framework/core/memory/host_memory.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "framework/parse.h"

namespace amlp::detail {

namespace {

// The first line of a file, "" when it cannot be read.
std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  return line;
}

// A byte count as a cgroup file holds it; nullopt for "max", garbage, or v1's
// "unlimited" (PAGE_COUNTER_MAX pages, about 2^63).
std::optional<size_t> limit_value(const std::string& text) {
  if (text.empty() || text == "max" || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE || v == 0 || v >= (1ull << 62)) return std::nullopt;
  return static_cast<size_t>(v);
}

// "/a/b/c" -> {"/a/b/c", "/a/b", "/a", ""}: the cgroup and its ancestors,
// relative to the mount ("" is the mount's root, which in a cgroup namespace
// is the process's own cgroup).
std::vector<std::string> path_and_ancestors(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  if (p == "/") p.clear();
  std::vector<std::string> out;
  for (;;) {
    out.push_back(p);
    if (p.empty()) break;
    const size_t slash = p.find_last_of('/');
    p = slash == std::string::npos ? "" : p.substr(0, slash);
  }
  return out;
}

}  // namespace

std::optional<CgroupLimit> read_cgroup_limit(const std::string& proc, const std::string& cgroup_root) {
  std::ifstream in(proc + "/self/cgroup");
  std::string v2_path, v1_path;
  bool v2 = false, v1 = false;
  for (std::string line; std::getline(in, line);) {
    // "0::/path" (v2) or "4:memory:/path" (v1, controllers comma-separated)
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && controllers.empty()) {
      v2 = true;
      v2_path = path;
    }
    std::stringstream cs(controllers);
    for (std::string c; std::getline(cs, c, ',');)
      if (c == "memory") {
        v1 = true;
        v1_path = path;
      }
  }
  std::optional<CgroupLimit> best;
  const auto consider = [&](const std::string& file, const char* name) {
    if (auto v = limit_value(first_line(file)); v && (!best || *v < best->bytes)) best = CgroupLimit{*v, name};
  };
  if (v1) {  // a memory controller on v1 wins: v2's memory.max is then absent
    for (const std::string& p : path_and_ancestors(v1_path))
      consider(cgroup_root + "/memory" + p + "/memory.limit_in_bytes", "cgroup v1 memory.limit_in_bytes");
  } else if (v2) {
    for (const std::string& p : path_and_ancestors(v2_path))
      consider(cgroup_root + p + "/memory.max", "cgroup v2 memory.max");
  }
  return best;
}

std::optional<size_t> read_mem_available(const std::string& proc) {
  std::ifstream in(proc + "/meminfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream s(line.substr(13));
    unsigned long long kb = 0;
    std::string unit;
    if (s >> kb >> unit && unit == "kB") return static_cast<size_t>(kb) * 1024;
    return std::nullopt;
  }
  return std::nullopt;
}

MemoryBudget read_host_memory_budget(const std::string& proc, const std::string& cgroup_root, const AddressSpace& as) {
  const std::optional<CgroupLimit> cg = read_cgroup_limit(proc, cgroup_root);
  const std::optional<size_t> avail = read_mem_available(proc);
  MemoryBudget host;
  if (cg || avail) {
    size_t raw = 0;
    std::string source;
    if (cg && (!avail || cg->bytes <= *avail)) {
      raw = cg->bytes;
      source = cg->file;
    } else {
      raw = *avail;
      source = "MemAvailable at start";
    }
    // The margin: what the process needs besides the pool (stacks, the
    // frontend's own heap, libraries) and what others take meanwhile.
    const size_t margin = std::max(raw / 10, kHostMarginMin);
    host.bytes = raw > 2 * margin ? raw - margin : raw / 2;
    host.source = source + ", less a " + (raw / 10 >= kHostMarginMin ? "10%" : "256 MiB") + " margin";
  }
  if (!as.limited()) {
    if (!cg && !avail) return {0, "none (neither a cgroup limit nor /proc/meminfo could be read)"};
    return host;
  }
  // The process's own limit: only its own mappings count against it, and the
  // margin is the room they need beside the pool, held back whole.
  const size_t raw = as.left();
  const size_t margin = std::max(raw / 10, kAddressReserveBytes);
  MemoryBudget space;
  space.bytes = raw > margin ? raw - margin : kNoRoomBytes;
  space.source = as.describe() + " at start, less a " +
                 (raw / 10 >= kAddressReserveBytes ? std::string("10%") : format_mib(double(kAddressReserveBytes))) +
                 " margin for OpenBLAS's buffers, thread stacks and the heap" +
                 (raw > margin ? "" : ": no room left for tensors");
  return (cg || avail) && host.bytes <= space.bytes ? host : space;
}

}  // namespace amlp::detail
