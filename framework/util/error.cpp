#include "framework/error.h"

namespace amlp {

static std::string mib(size_t b) { return detail::concat(b / (1024.0 * 1024.0), " MiB"); }

static std::string oom_message(const std::string& device, size_t req, size_t in_use, size_t reserved, size_t limit,
                               const std::string& source) {
  std::string m = detail::concat("out of memory on ", device, ": requested ", req, " bytes (", mib(req), ") with ",
                                 in_use, " bytes in use and ", reserved, " reserved");
  if (limit)
    return m + detail::concat(", past the limit of ", limit, " bytes (", mib(limit),
                              source.empty() ? std::string() : ", " + source, "; cache already released)");
  return m + " (" + (source.empty() ? std::string("the device has no more") : source) + "; cache already released)";
}

OutOfMemory::OutOfMemory(const std::string& device, size_t req, size_t in_use_, size_t reserved_, size_t limit_,
                         const std::string& limit_source_)
    : Error(oom_message(device, req, in_use_, reserved_, limit_, limit_source_)),
      requested(req),
      in_use(in_use_),
      reserved(reserved_),
      limit(limit_),
      limit_source(limit_source_) {}

OutOfMemory::OutOfMemory(const std::string& device, size_t req, const std::string& why)
    : Error(detail::concat("out of memory on ", device, ": requested ", req, " bytes (", mib(req),
                           ") outside the pool: ", why)),
      requested(req) {}

OutOfMemory::OutOfMemory(const std::string& message, const OutOfMemory& f)
    : Error(message),
      requested(f.requested),
      in_use(f.in_use),
      reserved(f.reserved),
      limit(f.limit),
      limit_source(f.limit_source) {}

OutOfMemory OutOfMemory::starting_op(const std::string& op, uint64_t seq, const std::string& queue,
                                     bool resident) const {
  return OutOfMemory(detail::concat(what(), resident ? " while making the outputs of op '" : " while allocating the outputs of op '",
                                    op, "' (op #", seq, " on ", queue,
                                    resident ? ") resident as it started" : ") as it started (allocation policy run)"),
                     *this);
}

static std::string kernel_message(const std::string& op, uint64_t seq, const std::string& device,
                                  const std::string& what, KernelError::Blame blame) {
  if (blame == KernelError::Blame::Culprit)
    return detail::concat("kernel '", op, "' (op #", seq, " on ", device, ") failed: ", what);
  return detail::concat("asynchronous device fault on ", device, ", exposed as kernel '", op, "' (op #", seq,
                        ") completed; it may not be the culprit (an op launched before it may have faulted; rerun "
                        "with ASYNCMLP_BLOCKING=1 to find the op): ",
                        what);
}

KernelError::KernelError(std::string op_, uint64_t seq_, std::string device_, const std::string& what, Blame blame_)
    : Error(kernel_message(op_, seq_, device_, what, blame_)),
      op(std::move(op_)),
      seq(seq_),
      device(std::move(device_)),
      blame(blame_) {}

}  // namespace amlp
