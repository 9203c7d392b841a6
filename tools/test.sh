#!/usr/bin/env bash
# Every test: the release build's suites and the installed library (the
# README's example built against it, tools/check_install.sh), then the suites under
# AddressSanitizer+UBSan and under ThreadSanitizer (CPU-only builds: the CUDA
# runtime only adds noise there, and the suites that need a GPU are not built).
# CUDA suites skip, with the reason, when no GPU is visible.
#
#   bash tools/test.sh            # all three
#   bash tools/test.sh --fast     # the release build's suites and the installed library only
#
# It ends with a table of the seconds each phase took; from a fresh clone (no
# build folder yet) on two cores it also puts its whole time beside the
# README's figure for it.
source "$(dirname "$0")/setup.sh"
fast=0
[ "${1:-}" = --fast ] && fast=1
fresh=1
for d in build build-asan build-tsan; do [ -e "$AMLP_ROOT/$d" ] && fresh=0; done
amlp_install_deps
cd "$AMLP_ROOT"
jobs=$(nproc)

amlp_build build
amlp_phase "tests (release build)"
(cd build && ctest --output-on-failure -j "$jobs")
amlp_phase "the installed library" \
  "the installed library: cmake --install into a fresh prefix, examples/ built against it and run"
bash tools/check_install.sh build

if [ "$fast" = 0 ]; then
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  export LSAN_OPTIONS=suppressions=$AMLP_ROOT/tests/lsan.supp
  amlp_build build-asan -DASYNCMLP_CUDA=OFF -DASYNCMLP_BENCH=OFF -DASYNCMLP_SANITIZE=address -DCMAKE_BUILD_TYPE=RelWithDebInfo
  amlp_phase "tests under ASan+UBSan"
  (cd build-asan && ctest --output-on-failure -j "$jobs")

  export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$AMLP_ROOT/tests/tsan.supp"
  amlp_build build-tsan -DASYNCMLP_CUDA=OFF -DASYNCMLP_BENCH=OFF -DASYNCMLP_SANITIZE=thread -DCMAKE_BUILD_TYPE=RelWithDebInfo
  amlp_phase "tests under TSan"
  (cd build-tsan && ctest --output-on-failure -j "$jobs")
fi
amlp_log "all tests passed"
amlp_phase_table
# The README's figure for this command from a fresh clone on two cores ("| `bash
# tools/test.sh` | 11 min |"): this run's time beside it, when this run is one.
if [ "$fresh" = 1 ] && [ "$fast" = 0 ] && [ "$jobs" = 2 ]; then
  said=$(sed -n 's/^| `bash tools\/test.sh` | \([0-9.]*\) min .*/\1/p' README.md | head -1)
  if [ -n "$said" ]; then
    awk -v s="$SECONDS" -v m="$said" 'BEGIN {
      r = s / (60 * m);
      printf "==> from a fresh clone on 2 cores: %.1f min; the README says %s min (%.2fx: %s)\n", s / 60, m, r,
             (r <= 2 && r >= 0.5) ? "within 2x" : "NOT within 2x: a loaded machine, or the README is stale" }' >&2
  fi
fi
