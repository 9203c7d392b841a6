// backends.h — the factories of the concrete backends, one per backend, each
// defined in its backend's folder. Only registry/backends.cpp (and tests that
// build a backend of their own) call them; the engine asks make_backend()
// (core/context.h).
//
//   std::unique_ptr<Backend> b = make_cpu_backend(3);   // a CPU backend no context owns
#pragma once
#include <memory>

#include "framework/core/backend/backend.h"

namespace amlp {

std::unique_ptr<Backend> make_cpu_backend(int index);   // cpu/cpu_backend.cpp
// cuda/cuda_device.cpp; in a build without CUDA cuda/no_cuda.cpp, which
// throws DeviceError.
std::unique_ptr<Backend> make_cuda_backend(int index);

}  // namespace amlp
