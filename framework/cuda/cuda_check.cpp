// cuda_check.cpp — messages for the CUDA error-check family (cuda_check.h).
#include "framework/cuda/cuda_check.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "framework/error.h"

namespace amlp::cuda {

const char* status_string(curandStatus_t s) {
  switch (s) {
    case CURAND_STATUS_SUCCESS: return "CURAND_STATUS_SUCCESS";
    case CURAND_STATUS_VERSION_MISMATCH: return "CURAND_STATUS_VERSION_MISMATCH";
    case CURAND_STATUS_NOT_INITIALIZED: return "CURAND_STATUS_NOT_INITIALIZED";
    case CURAND_STATUS_ALLOCATION_FAILED: return "CURAND_STATUS_ALLOCATION_FAILED";
    case CURAND_STATUS_TYPE_ERROR: return "CURAND_STATUS_TYPE_ERROR";
    case CURAND_STATUS_OUT_OF_RANGE: return "CURAND_STATUS_OUT_OF_RANGE";
    case CURAND_STATUS_LENGTH_NOT_MULTIPLE: return "CURAND_STATUS_LENGTH_NOT_MULTIPLE";
    case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED: return "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED";
    case CURAND_STATUS_LAUNCH_FAILURE: return "CURAND_STATUS_LAUNCH_FAILURE";
    case CURAND_STATUS_PREEXISTING_FAILURE: return "CURAND_STATUS_PREEXISTING_FAILURE";
    case CURAND_STATUS_INITIALIZATION_FAILED: return "CURAND_STATUS_INITIALIZATION_FAILED";
    case CURAND_STATUS_ARCH_MISMATCH: return "CURAND_STATUS_ARCH_MISMATCH";
    case CURAND_STATUS_INTERNAL_ERROR: return "CURAND_STATUS_INTERNAL_ERROR";
  }
  return "unknown cuRAND status";
}

namespace {

// "cuda:N" for the calling thread's current device, without creating a context.
std::string current_device() {
  int d = -1;
  if (cudaGetDevice(&d) != cudaSuccess) {
    (void)cudaGetLastError();
    return "cuda:?";
  }
  return "cuda:" + std::to_string(d);
}

// The source file from the repository's root (framework/cuda/x.cu), whichever path
// __FILE__ holds: the C++ files' is already from the root (CMakeLists.txt's
// -ffile-prefix-map), nvcc's kernels' absolute. The same message from every build
// and clone.
const char* from_root(const char* file) {
  const char* from = file;
  for (const char* p = std::strstr(file, "framework/"); p; p = std::strstr(p + 1, "framework/")) from = p;
  return from;
}

std::string message(const char* file, int line, const char* call, const char* status, int code,
                    const std::string& where) {
  return detail::concat(from_root(file), ":", line, ": ", call, " failed: ", status, " (code ", code, ") on ",
                        where);
}

}  // namespace

bool is_sticky_fault(int code, const char* status) {
  if (!status || std::strcmp(status, cudaGetErrorString(static_cast<cudaError_t>(code))) != 0) return false;
  switch (static_cast<cudaError_t>(code)) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorHardwareStackError:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
      return true;
    default:
      return false;
  }
}

void throw_failure(const char* file, int line, const char* call, const char* status, int code) {
  std::string m = message(file, line, call, status, code, current_device());
  (void)cudaGetLastError();  // reported once, here
  if (is_sticky_fault(code, status)) throw DeviceFault(m);
  throw Error(m);
}

void throw_failure_on(const char* file, int line, const char* call, const char* status, int code, const char* where) {
  if (is_sticky_fault(code, status)) throw DeviceFault(message(file, line, call, status, code, where));
  throw Error(message(file, line, call, status, code, where));
}

void log_failure(const char* file, int line, const char* call, const char* status, int code) noexcept {
  for (cudaError_t quiet : {cudaErrorCudartUnloading, cudaErrorContextIsDestroyed})
    if (code == static_cast<int>(quiet) && std::strcmp(status, cudaGetErrorString(quiet)) == 0) return;
  try {
    std::string m = message(file, line, call, status, code, current_device());
    std::fprintf(stderr, "asyncmlp: %s\n", m.c_str());
  } catch (...) {
    std::fprintf(stderr, "asyncmlp: %s:%d: %s failed: %s\n", from_root(file), line, call, status);
  }
  (void)cudaGetLastError();
}

}  // namespace amlp::cuda
