#include "framework/error.h"

namespace amlp {

static std::string mib(size_t b) { return detail::concat(b / (1024.0 * 1024.0), " MiB"); }

OutOfMemory::OutOfMemory(const std::string& device, size_t req, size_t in_use, size_t reserved)
    : Error(detail::concat("out of memory on ", device, ": requested ", req, " bytes (", mib(req),
                           ") with ", in_use, " bytes in use and ", reserved,
                           " reserved (cache already released)")),
      requested(req) {}

KernelError::KernelError(std::string op_, uint64_t seq_, std::string device_, const std::string& what)
    : Error(detail::concat("kernel '", op_, "' (op #", seq_, " on ", device_, ") failed: ", what)),
      op(std::move(op_)),
      seq(seq_),
      device(std::move(device_)) {}

}  // namespace amlp
