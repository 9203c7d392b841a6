// sanitizers.h — whether this translation unit is built under AddressSanitizer
// or ThreadSanitizer, with GCC (__SANITIZE_*__) or Clang (__has_feature): one
// place for the engine (the pool's poisoning, the host budget's shadow share)
// and the tests (tests/sanitized.h).
//
//   #if AMLP_ASAN  ...  #endif        or   if constexpr (amlp::kAddressSanitized) ...
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define AMLP_ASAN 1
#elif defined(__SANITIZE_THREAD__)
#define AMLP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AMLP_ASAN 1
#elif __has_feature(thread_sanitizer)
#define AMLP_TSAN 1
#endif
#endif
#ifndef AMLP_ASAN
#define AMLP_ASAN 0
#endif
#ifndef AMLP_TSAN
#define AMLP_TSAN 0
#endif
#define AMLP_SANITIZED (AMLP_ASAN || AMLP_TSAN)

namespace amlp {
inline constexpr bool kAddressSanitized = AMLP_ASAN;
inline constexpr bool kThreadSanitized = AMLP_TSAN;
inline constexpr bool kSanitized = kAddressSanitized || kThreadSanitized;
}  // namespace amlp
