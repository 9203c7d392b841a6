// error.h — the exceptions the framework throws.
//
// Every error a user can cause (bad shape, absent device, out of memory, a
// kernel that failed on a worker) is an amlp::Error with one clear message.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace amlp {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A frontend op was given arguments that do not fit (thrown on the calling
// thread, before anything is queued; names both shapes).
struct ShapeError : Error {
  using Error::Error;
};

// A device string that does not parse, or names a device that is not there.
struct DeviceError : Error {
  using Error::Error;
};

// A variable of the environment the library reads (docs/cli.md, util/env.h)
// holds a value it does not take: one line naming each such variable and its
// value. Thrown by check_environment() and by a device's first use; a program
// reports it as bad input (train_mlp and async_demo: exit 2).
struct EnvError : Error {
  using Error::Error;
};

// A pool could not satisfy a request even after releasing its cache: past
// its limit (`limit` > 0: the request would have taken the reserved bytes past
// it), or the device itself had no more. The message names every figure and,
// for a limit, where it came from ("MemAvailable at start, less 10%", ...);
// below any limit, `limit_source` says why the device gave no more when it is
// not that it had none (a CPU pool: the room an address-space limit keeps
// for OpenBLAS).
struct OutOfMemory : Error {
  OutOfMemory(const std::string& device, size_t requested, size_t in_use, size_t reserved, size_t limit = 0,
              const std::string& limit_source = "");
  // Memory a library maps outside the pool that would not fit (OpenBLAS's
  // buffer in a limited address space, cpu/blas_room.h): `why` says what
  // wanted it and what the limit left.
  OutOfMemory(const std::string& device, size_t requested, const std::string& why);
  // The same failure met by a queue's worker as it allocated the outputs of
  // an op it was starting (allocation policy `run`), or made them resident
  // (`resident`: a CPU block the populator had not reached): the message says which.
  OutOfMemory starting_op(const std::string& op, uint64_t seq, const std::string& queue, bool resident = false) const;
  size_t requested;
  size_t in_use = 0, reserved = 0;
  size_t limit = 0;  // 0: the device ran out below any limit
  std::string limit_source;

 private:
  OutOfMemory(const std::string& message, const OutOfMemory& figures);
};

// What an op's outputs carry when its queue dropped it before it ran
// (drop_pending(): a run that stopped). A blocker on such an output throws it.
struct Dropped : Error {
  using Error::Error;
};

// A device found failed after work was launched on it (CUDA: a kernel that
// faulted, seen by whichever later call queries the device). A backend
// throws it from StreamSync::after_op or wait_complete (or from a kernel's
// own launch); the queue turns it into a KernelError that names the op whose
// completion exposed it (Blame::ExposedBy).
struct DeviceFault : Error {
  using Error::Error;
};

// What a blocker poll (set_blocker_poll, runtime.h) throws to end a wait: the
// library's waits pass it to the blocker's caller untouched (never kept as a
// device's error), and the queued work stays queued.
struct WaitInterrupted : Error {
  using Error::Error;
};

// A kernel failed on a backend worker. Kept with the op's name and sequence
// number, rethrown by the next blocker on the frontend (docs/design.md §5).
//
// Blame::Culprit: op `seq` failed (its kernel threw, its launch or its
// allocation failed). Blame::ExposedBy: an asynchronous device fault came to
// light as op `seq` completed, or as a blocker waited for it; an op launched
// before it may have caused it, and the message says so (in synchronous mode
// every op is waited for as it is queued, so a fault there is the op's own).
struct KernelError : Error {
  enum class Blame { Culprit, ExposedBy };
  KernelError(std::string op, uint64_t seq, std::string device, const std::string& what,
              Blame blame = Blame::Culprit);
  std::string op;
  uint64_t seq;
  std::string device;
  Blame blame;
};

}  // namespace amlp

#include <sstream>
namespace amlp::detail {
template <class... A>
std::string concat(const A&... a) {
  std::ostringstream s;
  (s << ... << a);
  return s.str();
}
}  // namespace amlp::detail
