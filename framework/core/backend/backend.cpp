// backend.cpp — the table a composition (kernels.h) calls through.
#include "framework/core/backend/backend.h"

namespace amlp {

const KernelTable& kernels_of(Backend& be) { return be.kernels; }

}  // namespace amlp
