// no_cuda.cpp — linked when the CUDA backend is not built.
#include "framework/device.h"
#include "framework/error.h"
#include "framework/core/context.h"
#include "framework/core/settings.h"

namespace amlp {

bool built_with_cuda() { return false; }
int cuda_device_count() { return 0; }
bool device_memory_info(Device, size_t*, size_t*) { return false; }
std::unique_ptr<Backend> make_cuda_backend(int index) {
  throw DeviceError(detail::device_absent("cuda:" + std::to_string(index)));
}

}  // namespace amlp
