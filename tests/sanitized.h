// sanitized.h — whether this test binary runs under AddressSanitizer or
// ThreadSanitizer (framework/core/memory/sanitizers.h decides, for the engine too).
// Sanitizers run several times slower (suites scale their rounds down) and
// fault in shadow memory page by page beside every block the program touches
// (page-fault and RSS bounds hold only in the release build).
#pragma once
#include "framework/core/memory/sanitizers.h"

namespace amlp::testing {
using amlp::kAddressSanitized;
using amlp::kSanitized;
using amlp::kThreadSanitized;
}  // namespace amlp::testing
