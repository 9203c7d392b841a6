// sanitized.h — whether this test binary runs under AddressSanitizer or
// ThreadSanitizer. Sanitizers run several times slower (suites scale their
// rounds down) and fault in shadow memory page by page beside every block the
// program touches (page-fault and RSS bounds hold only in the release build).
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define AMLP_TEST_ASAN 1
#elif defined(__SANITIZE_THREAD__)
#define AMLP_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AMLP_TEST_ASAN 1
#elif __has_feature(thread_sanitizer)
#define AMLP_TEST_TSAN 1
#endif
#endif
#if defined(AMLP_TEST_ASAN) || defined(AMLP_TEST_TSAN)
#define AMLP_TEST_SANITIZED 1
#endif

namespace amlp::testing {
#ifdef AMLP_TEST_ASAN
inline constexpr bool kAddressSanitized = true;
#else
inline constexpr bool kAddressSanitized = false;
#endif
#ifdef AMLP_TEST_TSAN
inline constexpr bool kThreadSanitized = true;
#else
inline constexpr bool kThreadSanitized = false;
#endif
inline constexpr bool kSanitized = kAddressSanitized || kThreadSanitized;
}  // namespace amlp::testing
