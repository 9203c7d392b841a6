// blas_room.cpp — room for OpenBLAS in a limited address space (blas_room.h):
// the check at load and the check around each GEMM.
#include "framework/cpu/blas_room.h"

#include <malloc.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "framework/error.h"
#include "framework/parse.h"
#include "framework/runtime.h"

namespace amlp::cpu {

namespace {

// NAME's value in `envp`, or null. OpenBLAS's own variables, read here
// because they must be read before OpenBLAS starts; the library's own are
// util/env.h's.
const char* env_in(char** envp, const char* name) {
  const size_t n = std::strlen(name);
  for (char** e = envp; e && *e; ++e)
    if (std::strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  return nullptr;
}

std::string mib(size_t bytes) { return format_mib(double(bytes)); }

// GEMMs in flight now, and the most that ever were: OpenBLAS mapped a buffer
// for each of those and keeps it, free for the next caller.
std::atomic<int> g_in_flight{0};
std::atomic<int> g_peak{0};

#ifndef ASYNCMLP_NO_LOAD_CHECK  // a shared object (the Python module) may not have a .preinit_array
// The check at load (blas_room.h). Runs from .preinit_array: after the
// libraries are mapped and relocated, before any of their initialisers
// (OpenBLAS's, which starts its threads, and the CUDA libraries', which
// crash when an allocation fails) and before this program's own; so it
// uses nothing an initialiser sets up (system calls, snprintf, strings),
// and ends the program with _exit. argv and envp are the process's own.
void check_at_load(int argc, char** argv, char** envp) {
  const detail::AddressSpace a = detail::address_space_now();
  if (!a.limited()) return;
  const size_t room = amlp_tensor_room_at_load ? amlp_tensor_room_at_load(argc, argv) : kRunTensorBytes;
  const LoadPlan p = plan_at_load(a.left(), openblas_threads_at_load(envp), room);
  if (p.fits) {
    detail::note_mapped_at_start(a.vm_size, a.vm_data, size_t(p.threads - 1) * kBlasThreadBytes);
    // glibc gives each thread that allocates an arena of its own, 64 MiB of
    // address space apiece (a worker, a populator, a second device's): under
    // a limit they would take the room a GEMM's buffer needs, at moments no
    // check sees. One arena for every thread instead.
    ::mallopt(M_ARENA_MAX, 1);
    return;
  }
  const char* program = argv && argv[0] ? argv[0] : "asyncmlp";
  if (const char* slash = std::strrchr(program, '/')) program = slash + 1;
  const std::string line = std::string(program) + ": error: " + refusal(a, p) + "\n";
  for (size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(2, line.data() + done, line.size() - done);
    if (n <= 0) break;
    done += size_t(n);
  }
  ::_exit(1);
}

__attribute__((section(".preinit_array"), used)) void (*const kCheckAtLoad)(int, char**, char**) = check_at_load;
#endif

}  // namespace

LoadPlan plan_at_load(size_t left, int openblas_threads, size_t tensor_room) {
  LoadPlan p;
  p.threads = openblas_threads < 1 ? 1 : openblas_threads;
  p.tensor_room = tensor_room < kMinPoolBytes ? kMinPoolBytes : tensor_room;
  const size_t beyond_first = size_t(p.threads - 1) * kBlasThreadBytes;
  p.need = kLibraryStartBytes + detail::kAddressReserveBytes + kMinPoolBytes + beyond_first;
  p.advise_one = kLibraryStartBytes + detail::kAddressReserveBytes + kBlasKeepBytes + p.tensor_room;
  p.advise = p.advise_one + beyond_first;
  p.fits = left >= p.need;
  p.threads_fit = left < p.advise_one ? 0 : static_cast<int>(1 + (left - p.advise_one) / kBlasThreadBytes);
  if (p.threads_fit > p.threads) p.threads_fit = p.threads;
  return p;
}

int openblas_threads_at_load(char** envp) {
  long cores = ::sysconf(_SC_NPROCESSORS_CONF);
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0 && CPU_COUNT(&set) < cores)
    cores = CPU_COUNT(&set);
  if (cores < 1) cores = 1;
  for (const char* name : {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"}) {
    const char* v = env_in(envp, name);
    const int n = v ? std::atoi(v) : 0;  // as OpenBLAS reads them
    if (n > 0) return n < cores ? n : static_cast<int>(cores);
  }
  return static_cast<int>(cores);
}

std::string refusal(const detail::AddressSpace& a, const LoadPlan& p) {
  const bool data = a.data_binds();
  const size_t limit = data ? a.data_limit : a.as_limit, used = data ? a.vm_data : a.vm_size;
  const auto at_least = [&](size_t need) {
    return mib(used + need) + (data ? " (ulimit -d " : " (ulimit -v ") + std::to_string((used + need + 1023) / 1024) +
           ")";
  };
  std::string m = std::string("the address-space limit leaves no room to start: ") +
                  (data ? "RLIMIT_DATA (ulimit -d) is " : "RLIMIT_AS (ulimit -v) is ") + mib(limit) +
                  ", the program and its libraries map " + mib(used) + (data ? " of private writable memory" : "") +
                  ", and a run needs " + mib(p.advise) + " more (";
  if (p.threads > 1)
    m += "OpenBLAS's " + std::to_string(p.threads) + " threads: " + mib(kBlasThreadBytes) +
         " for each beyond the first, its buffer and stack; ";
  m += mib(detail::kAddressReserveBytes) + " for a GEMM's buffer, thread stacks and the heap; " + mib(kBlasKeepBytes) +
       " the pools keep free for another GEMM's buffer; " + mib(p.tensor_room) +
       " for this run's tensors): raise it to at least " + at_least(p.advise);
  if (p.threads_fit >= 1)
    m += ", or set OPENBLAS_NUM_THREADS=" + std::to_string(p.threads_fit) + ", which fits";
  else if (p.threads > 1)
    m += ", or to " + at_least(p.advise_one) + " with OPENBLAS_NUM_THREADS=1";
  return m;
}

std::mutex& room_mutex() {
  static std::mutex m;
  return m;
}

// What to do about a limit that leaves too little: the limit raised, or the
// pools given less by the program's own knob (memory_limit_knob).
static std::string raise_advice() {
  const std::string knob = memory_limit_knob();
  return "raise the limit" + (knob.empty() ? std::string() : ", or give the pools less memory (" + knob + ")");
}

std::string blas_room_problem(const detail::AddressSpace& a) {
  if (!a.limited() || a.left() >= kBlasKeepBytes) return "";
  return "OpenBLAS maps a " + mib(kBlasBufferBytes) + " buffer for a GEMM that finds none free, and " + a.describe() +
         " leaves " + mib(a.left()) +
         " (OpenBLAS would retry the mapping for ever): " + raise_advice();
}

std::string pool_mapping_problem(size_t bytes, const detail::AddressSpace& a) {
  if (!a.limited()) return "";
  const size_t keep = kBlasKeepBytes, left = a.left();
  if (left >= keep && left - keep >= bytes) return "";
  return a.describe() + " leaves " + mib(left) + ", and " + mib(keep) +
         " of it stays free for OpenBLAS's buffer (a GEMM that finds none free maps one, and would retry the "
         "mapping for ever): " + raise_advice();
}

// The peak is raised under room_mutex(); under a limit the lock stays held
// until this GEMM ends, so whatever maps next sees its buffer mapped.
BlasCall::BlasCall(const std::string& device) {
  const int n = g_in_flight.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (n <= g_peak.load(std::memory_order_acquire)) return;  // a buffer mapped before is free for it
  std::unique_lock<std::mutex> lk(room_mutex());
  if (n <= g_peak.load(std::memory_order_relaxed)) return;
  const detail::AddressSpace a = detail::address_space_now();
  const std::string why = blas_room_problem(a);
  if (!why.empty()) {
    g_in_flight.fetch_sub(1, std::memory_order_acq_rel);
    throw OutOfMemory(device, kBlasBufferBytes, why);
  }
  g_peak.store(n, std::memory_order_release);
  if (a.limited()) room_ = std::move(lk);
}

BlasCall::~BlasCall() { g_in_flight.fetch_sub(1, std::memory_order_acq_rel); }

int blas_threads_that_fit(int n, int started, const detail::AddressSpace& a) {
  if (n <= started || !a.limited()) return n;
  const size_t left = a.left();
  const size_t room = left > detail::kAddressReserveBytes ? left - detail::kAddressReserveBytes : 0;
  const size_t more = room / kBlasThreadBytes;
  return size_t(n - started) <= more ? n : started + static_cast<int>(more);
}

}  // namespace amlp::cpu

namespace amlp {

void check_blas_room() { cpu::BlasCall probe("this thread"); }

}  // namespace amlp
