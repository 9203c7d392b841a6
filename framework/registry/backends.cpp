// backends.cpp — the one file that names the concrete backends (as ggml's
// ggml-backend-reg.cpp does): which backend serves a device. Its layer sits
// above cpu/ and cuda/ and below ops/; core/ reaches it only through
// make_backend(), declared in core/context.h.
#include "framework/registry/backends.h"

#include "framework/core/context.h"

namespace amlp {

std::unique_ptr<Backend> make_backend(Device d) {
  return d.is_cuda() ? make_cuda_backend(d.index) : make_cpu_backend(d.index);
}

}  // namespace amlp
