// cuda_check.h — the one error-check family for CUDA, cuBLAS and cuRAND calls.
//
//   AMLP_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, s));  // throws amlp::Error
//   AMLP_CUDA_CHECK(cublasSgemm(...));   // the same macro takes cublasStatus_t
//   AMLP_CUDA_CHECK(curandGenerateNormal(...));          // and curandStatus_t
//   AMLP_CUDA_CHECK_LAUNCH();            // cudaGetLastError() after every kernel launch
//   AMLP_CUDA_CHECK_LOG(cudaFree(p));    // destructors: logs to stderr, never throws
//
// A failure reads "file:line: call failed: <error string> (code N) on cuda:K",
// so a worker can hand it to the frontend as it is. Private to framework/cuda
// (the CUDA benchmarks, and the CPU backend's cuRAND host generator): no
// public header includes it.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <curand.h>

#include <string>

#include "framework/error.h"

namespace amlp::cuda {

inline bool is_ok(cudaError_t s) { return s == cudaSuccess; }
inline bool is_ok(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS; }
inline bool is_ok(curandStatus_t s) { return s == CURAND_STATUS_SUCCESS; }

inline const char* status_string(cudaError_t s) { return cudaGetErrorString(s); }
inline const char* status_string(cublasStatus_t s) { return cublasGetStatusString(s); }
const char* status_string(curandStatus_t s);  // cuRAND has no string function of its own

// Throws amlp::Error with the message above, amlp::DeviceFault for a sticky
// fault (is_sticky_fault: a kernel launched earlier failed; the queue names
// the op that exposed it, error.h). Clears the runtime's last error
// first, so a failure that was reported is not reported again by the next
// cudaGetLastError() (sticky errors stay, as they must).
[[noreturn]] void throw_failure(const char* file, int line, const char* call, const char* status, int code);
// Writes the same message to stderr. Quiet for cudaErrorCudartUnloading and
// cudaErrorContextIsDestroyed (at process exit the runtime may already be
// gone: there is nothing left to free).
void log_failure(const char* file, int line, const char* call, const char* status, int code) noexcept;

// The same, naming `where` instead of the current GPU (cuRAND's host
// generator on a CPU device).
[[noreturn]] void throw_failure_on(const char* file, int line, const char* call, const char* status, int code,
                                   const char* where);

// A kernel fault the CUDA context keeps (an illegal address, a trap, ...):
// every later call on the device reports it, whichever op made it. False
// for cuBLAS/cuRAND/NCCL statuses (`status` is not the CUDA string of `code`).
bool is_sticky_fault(int code, const char* status);

template <class Status>
inline void check(Status s, const char* file, int line, const char* call) {
  if (!is_ok(s)) throw_failure(file, line, call, status_string(s), static_cast<int>(s));
}
template <class Status>
inline void check_on(Status s, const char* file, int line, const char* call, const char* where) {
  if (!is_ok(s)) throw_failure_on(file, line, call, status_string(s), static_cast<int>(s), where);
}
template <class Status>
inline void check_log(Status s, const char* file, int line, const char* call) noexcept {
  if (!is_ok(s)) log_failure(file, line, call, status_string(s), static_cast<int>(s));
}

}  // namespace amlp::cuda

#define AMLP_CUDA_CHECK(call)                                        \
  do {                                                               \
    ::amlp::cuda::check((call), __FILE__, __LINE__, #call);          \
  } while (0)

// A call that does not run on the current GPU: `where` names the device.
#define AMLP_CUDA_CHECK_ON(call, where)                              \
  do {                                                               \
    ::amlp::cuda::check_on((call), __FILE__, __LINE__, #call, where); \
  } while (0)

#define AMLP_CUDA_CHECK_LOG(call)                                    \
  do {                                                               \
    ::amlp::cuda::check_log((call), __FILE__, __LINE__, #call);      \
  } while (0)

// After every kernel launch: a bad configuration or a launch failure.
#define AMLP_CUDA_CHECK_LAUNCH()                                                          \
  do {                                                                                    \
    ::amlp::cuda::check(cudaGetLastError(), __FILE__, __LINE__, "kernel launch");         \
  } while (0)
