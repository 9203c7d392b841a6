#!/usr/bin/env bash
# Every test: the release build's suites and the installed library (the
# README's example built against it, tools/check_install.sh), then the suites under
# AddressSanitizer+UBSan and under ThreadSanitizer (CPU-only builds: the CUDA
# runtime only adds noise there). CUDA suites skip, with the reason, when no
# GPU is visible.
#
#   bash tools/test.sh            # all three
#   bash tools/test.sh --fast     # the release build only
source "$(dirname "$0")/setup.sh"
fast=0
[ "${1:-}" = --fast ] && fast=1
amlp_install_deps
cd "$AMLP_ROOT"
jobs=$(nproc)

amlp_build build
amlp_log "tests (release build)"
(cd build && ctest --output-on-failure -j "$jobs")
amlp_log "the installed library: cmake --install into a fresh prefix, examples/ built against it and run"
bash tools/check_install.sh build

if [ "$fast" = 0 ]; then
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  export LSAN_OPTIONS=suppressions=$AMLP_ROOT/tests/lsan.supp
  amlp_build build-asan -DASYNCMLP_CUDA=OFF -DASYNCMLP_BENCH=OFF -DASYNCMLP_SANITIZE=address -DCMAKE_BUILD_TYPE=RelWithDebInfo
  amlp_log "tests under ASan+UBSan"
  (cd build-asan && ctest --output-on-failure -j "$jobs")

  export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$AMLP_ROOT/tests/tsan.supp"
  amlp_build build-tsan -DASYNCMLP_CUDA=OFF -DASYNCMLP_BENCH=OFF -DASYNCMLP_SANITIZE=thread -DCMAKE_BUILD_TYPE=RelWithDebInfo
  amlp_log "tests under TSan"
  (cd build-tsan && ctest --output-on-failure -j "$jobs")
fi
amlp_log "all tests passed"
