// split_in_two.h — one CPU kernel split in two parts: a persistent helper
// thread (started on first use, never per call) runs part 1 of the job
// while the calling worker runs part 0 (on two cores, both at once).
//
//   split_in_two([&](int part) { fill(part == 0 ? first_half : second_half); });
//
// No OpenMP: the helper sleeps on a condition variable between jobs, so it
// never spins beside OpenBLAS's threads. If the helper is busy with another
// device's job, or the machine has one core, both parts run on the caller,
// part 0 then part 1: the result is the same either way. fn must not throw.
#pragma once
#include <type_traits>
#include <utility>

namespace amlp::cpu {

// Runs fn(arg, 0) here and fn(arg, 1) on the helper; returns when both have
// finished. Returns whether the helper took part 1.
bool split_in_two(void (*fn)(void* arg, int part), void* arg);

template <class F>
bool split_in_two(F&& f) {
  return split_in_two([](void* a, int part) { (*static_cast<std::remove_reference_t<F>*>(a))(part); },
                   static_cast<void*>(&f));
}

}  // namespace amlp::cpu
