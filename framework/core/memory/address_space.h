// address_space.h — what the process's own limits leave it to map: RLIMIT_AS
// (ulimit -v) against VmSize, RLIMIT_DATA (ulimit -d) against VmData, the
// private writable part the kernel counts against it (/proc/self/status). A
// CPU pool's budget takes it beside the cgroup and MemAvailable
// (host_memory.h); cpu/blas_room.h keeps room in it for OpenBLAS.
//
//   AddressSpace a = detail::address_space_now();
//   if (a.limited() && a.left() < need) ...   // a mapping of `need` bytes would fail (ENOMEM)
//
// Reading allocates nothing and throws nothing (open, read, getrlimit), so
// the check at load (cpu/blas_room.cpp) can call it before the C++ runtime
// has started; the parsing reads a status file a test can fake.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace amlp::detail {

constexpr size_t kUnlimited = SIZE_MAX;

// What the process maps beside its pools, which a budget keeps free of them
// where the address space is limited: OpenBLAS's 128 MiB buffer for a GEMM
// (cpu/blas_room.h), the 8 MiB stacks of the threads a device starts, the
// heap. Measured on one CPU device (docs/cpu-pool.md, "Under ulimit -v"):
// past the pool and what was mapped when the budget was read, a run maps 146
// MiB more with configs/quick.ini, 148 MiB with configs/d2l.ini; the rest is
// room for a second device's stacks and buffer, or the heap's growth.
constexpr size_t kAddressReserveBytes = size_t(256) << 20;

struct AddressSpace {
  size_t as_limit = kUnlimited;    // RLIMIT_AS's soft limit, bytes; kUnlimited: none
  size_t data_limit = kUnlimited;  // RLIMIT_DATA's
  size_t vm_size = 0;              // VmSize: every mapping
  size_t vm_data = 0;              // VmData: the private writable mappings RLIMIT_DATA counts

  bool limited() const { return as_limit != kUnlimited || data_limit != kUnlimited; }
  // Bytes a new private writable mapping may still take: the smaller of what
  // each limit leaves (0 past it); kUnlimited when neither is set.
  size_t left() const;
  // RLIMIT_DATA leaves less than RLIMIT_AS (then it is the one to name).
  bool data_binds() const;
  // "RLIMIT_AS (ulimit -v) of 390.6 MiB, 189.3 MiB of it mapped": the limit
  // that binds and what was mapped against it.
  std::string describe() const;
};

// VmSize and VmData from PROC/self/status (0 when unreadable) and the limits
// as given, in bytes.
AddressSpace read_address_space(const char* proc, size_t as_limit, size_t data_limit);

// This process's, now: getrlimit, and /proc/self/status when a limit is set
// (nothing is read when neither is). What was noted at load counts as mapped
// even before it is (below).
AddressSpace address_space_now();
// Whether either limit is set now: getrlimit alone.
bool address_space_limited();

// Noted at load by cpu/blas_room.cpp: what was mapped then and what the
// libraries will map soon after, on threads of their own (OpenBLAS's server
// threads each map a buffer as they start, in the background, so a budget
// read a moment later may not see it yet). address_space_now() counts at
// least that sum as mapped; those mappings stay for the process's life.
void note_mapped_at_start(size_t vm_size, size_t vm_data, size_t soon);

}  // namespace amlp::detail
