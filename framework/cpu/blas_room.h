// blas_room.h — room in a limited address space (ulimit -v, RLIMIT_AS;
// RLIMIT_DATA) for OpenBLAS, which maps its buffers outside any pool and
// never gives up on one: OpenBLAS 0.3.21's blas_memory_alloc retries a failed
// mapping in an endless loop (each pthread server thread maps a 128 MiB
// buffer as it starts, at load; a GEMM that finds none of the buffers mapped
// before free maps one), and its exit handler then waits for the stuck
// thread, so the process neither computes nor ends, and ignores SIGINT. Two
// checks keep it from getting there:
//
// - At load, before OpenBLAS's initialiser starts its threads (a
//   .preinit_array entry of any program linked with the library): a limit
//   that cannot hold the libraries' start-up, OpenBLAS's server threads, one
//   GEMM buffer and a little for tensors ends the program with one line and
//   exit 1, naming the limit it needs and the OPENBLAS_NUM_THREADS that would
//   fit. (Setting that variable here would not do: glibc's own initialiser,
//   which runs after this and before OpenBLAS's, resets the environment to
//   the one the process started with.) A limit that holds them makes glibc's
//   malloc keep one arena (M_ARENA_MAX): each thread's own would reserve
//   64 MiB of the room, unseen by any check.
// - Around each GEMM, a BlasCall: OutOfMemory instead of the endless retry
//   when this GEMM may need a buffer no earlier one mapped and the limit
//   leaves no room for it. OpenBLAS keeps the buffers it mapped and hands a
//   free one to the next caller, so a GEMM needs a new one only when more
//   run at once than ever before (two CPU devices' workers, say): the count
//   of GEMMs in flight against its peak says when. The CPU backend's GEMM
//   holds one; a program that calls CBLAS itself calls amlp::check_blas_room()
//   (runtime.h) first. set_blas_threads() starts no more server threads than
//   the limit has room for.
//
// And a CPU pool's fresh mappings leave that room: under a limit, a pool maps
// only what leaves a GEMM's buffer beside it (pool_mapping_problem), whatever
// its budget; two pools with a budget each could otherwise take it between a
// GEMM's check and OpenBLAS's mapping. Check and mapping are one step under
// room_mutex(), which a GEMM that may map a buffer holds through its call:
// two such GEMMs, or such a GEMM and a pool, never count the same room.
//
// Where nothing limits the address space, each is one getrlimit per call.
#pragma once
#include <cstddef>
#include <mutex>
#include <string>

#include "framework/core/memory/address_space.h"

namespace amlp::cpu {

// OpenBLAS 0.3.21 (Debian's pthread build, x86-64): one mmap of 128 MiB per
// buffer (strace: mmap(NULL, 134217728, ...) from blas_memory_alloc), and the
// 8 MiB stack of each server thread beside it.
constexpr size_t kBlasBufferBytes = size_t(128) << 20;
constexpr size_t kBlasThreadBytes = kBlasBufferBytes + (size_t(8) << 20);
static_assert(detail::kAddressReserveBytes >= kBlasBufferBytes + 4 * (size_t(8) << 20),
              "a budget's margin holds a GEMM's buffer and the stacks of a device's threads");
// What the libraries' own initialisers map besides OpenBLAS's threads
// (measured: 0.1 MiB without CUDA, 6.3 MiB with the CUDA libraries).
constexpr size_t kLibraryStartBytes = size_t(8) << 20;
// The least a run gets for its tensors before the check at load refuses.
constexpr size_t kMinPoolBytes = size_t(16) << 20;
// What a CPU pool's fresh mappings leave free for a GEMM's buffer beyond what
// is mapped (pool_mapping_problem): OpenBLAS maps the buffer whole, and a
// little more for what the call allocates beside it.
constexpr size_t kBlasKeepBytes = kBlasBufferBytes + (size_t(16) << 20);
// The room for tensors the limit the check at load suggests leaves a run,
// where the program does not say (amlp_tensor_room_at_load, runtime.h).
constexpr size_t kRunTensorBytes = size_t(64) << 20;

// What the check at load decides, from the room the limit leaves once the
// libraries are mapped and the threads OpenBLAS would start with (each
// beyond the first maps a buffer and a stack as it starts).
// Below `need` no run can start; the figure a refusal suggests is `advise`,
// at which the run has what it maps beside its pools (kAddressReserveBytes:
// the first GEMM's buffer, thread stacks, the heap), the room the pools keep
// free for a further GEMM's buffer (kBlasKeepBytes) and `tensor_room` for
// its tensors: the run works there (tests/train/test_limits.cpp runs it).
struct LoadPlan {
  bool fits = true;
  int threads = 1;        // OpenBLAS's, as it will count them
  int threads_fit = 0;    // the most with which the run works at this limit (0: not even one)
  size_t need = 0;        // the least room to start with `threads`: start-up, their buffers, one GEMM's buffer and
                          // margin (kAddressReserveBytes), kMinPoolBytes
  size_t advise = 0;      // the room to suggest with `threads` (above)
  size_t advise_one = 0;  // the same with one thread
  size_t tensor_room = 0;
};
LoadPlan plan_at_load(size_t left, int openblas_threads, size_t tensor_room = kRunTensorBytes);

// The threads OpenBLAS starts with, as its initialiser counts them:
// OPENBLAS_NUM_THREADS, else GOTO_NUM_THREADS, else OMP_NUM_THREADS (the first
// positive), else one per core, at most the cores this process may run on.
// `envp` as main's third argument.
int openblas_threads_at_load(char** envp);

// The one line the check at load prints before it ends the program, without
// the "PROGRAM: error: " in front.
std::string refusal(const detail::AddressSpace& a, const LoadPlan& p);

// Held around one GEMM. Its constructor throws OutOfMemory (naming `device`
// and the limit) when more GEMMs are in flight than ever before, so OpenBLAS
// will map a buffer for this one, and the address space has no room for it;
// otherwise it reads nothing. Such a GEMM, under a limit, holds room_mutex()
// until it ends (its buffer is mapped by then).
class BlasCall {
 public:
  explicit BlasCall(const std::string& device);
  ~BlasCall();
  BlasCall(const BlasCall&) = delete;
  BlasCall& operator=(const BlasCall&) = delete;

 private:
  std::unique_lock<std::mutex> room_;
};
// The reason alone, from a reading of the address space ("" when there is room).
std::string blas_room_problem(const detail::AddressSpace& a);

// Whether a CPU pool may map `bytes` more in the address space `a` and leave
// room for a GEMM's buffer: "" when it may (or nothing is limited), else the
// reason, naming the limit. Read and mapped under room_mutex().
std::string pool_mapping_problem(size_t bytes, const detail::AddressSpace& a);

// The lock that makes a check of the room and the mapping it allows one step
// (above). Taken only where the address space is limited.
std::mutex& room_mutex();

// `n` threads for set_blas_threads, or fewer: OpenBLAS starts a server thread
// for each past `started` (the most it ran so far), which maps a buffer and a
// stack; no more than the address space `a` has room for beside the margin.
int blas_threads_that_fit(int n, int started, const detail::AddressSpace& a);

}  // namespace amlp::cpu
