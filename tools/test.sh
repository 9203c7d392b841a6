#!/usr/bin/env bash
# Every test: the release build's suites and the installed library (the
# README's example built against it, tools/check_install.sh), then the suites under
# ThreadSanitizer and under AddressSanitizer+UBSan (CPU-only builds: the CUDA
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
# ccache's counts of hits and misses, to say at the end whether this run's compiles
# were copies (another clone on the machine built these sources) or compiles.
ccache_counts() {
  command -v ccache >/dev/null || { echo "0 0"; return; }
  ccache --print-stats 2>/dev/null | awk -F'\t' '$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { h += $2 }
                                               $1 == "cache_miss" { m += $2 } END { print h + 0, m + 0 }'
}
read -r hits0 misses0 < <(ccache_counts)
if [ "$fast" = 1 ]; then amlp_install_deps "${AMLP_TEST_PACKAGES[@]}"; else amlp_install_deps clang "${AMLP_TEST_PACKAGES[@]}"; fi
cd "$AMLP_ROOT"
jobs=$(nproc)

# The sanitizer builds are compiled by clang where it can link both sanitizers' runtimes
# (they are a package of their own, which apt-get installs only as a recommendation):
# half gcc's compile time for them (ASan+UBSan 723 -> 361 compiler-seconds, TSan
# 426 -> 287) and faster suites. Else by gcc, saying so. (The release build takes
# clang whenever it is installed: tools/setup.sh, amlp_build.)
sanitizer_compiler() {
  local probe; probe=$(mktemp -d)
  can() { printf 'int main() { return 0; }\n' | clang++ -x c++ -fsanitize="$1" - -o "$probe/a.out" 2>/dev/null; }
  if command -v clang++ >/dev/null && ! { can thread && can address,undefined; }; then
    amlp_install_packages "libclang-rt-$(clang++ -dumpversion | cut -d. -f1)-dev" || true
  fi
  if command -v clang++ >/dev/null && can thread && can address,undefined; then
    echo "-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++"
  else
    amlp_log "clang++ cannot link the sanitizers here: the sanitizer builds use gcc (slower)"
    echo "-DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++"
  fi
  rm -rf "$probe"
}
sanitizer_args=(-DASYNCMLP_CUDA=OFF -DASYNCMLP_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo)
[ "$fast" = 1 ] || sanitizer_args+=($(sanitizer_compiler))
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$AMLP_ROOT/tests/lsan.supp
# atexit_sleep_ms=0: TSan otherwise sleeps a second in every process that exits
# with threads still running (each train_mlp a test starts: its queues' workers),
# idle time that was 195 of the TSan suite's 450 test-seconds.
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 atexit_sleep_ms=0 suppressions=$AMLP_ROOT/tests/tsan.supp"

# ctest counts a sanitizer suite's shards (tests/CMakeLists.txt,
# asyncmlp_add_gtests), not the tests in them: their tests' count, and the
# names of those that skipped, from the shards' output.
shards_summary() {
  local log="$1/Testing/Temporary/LastTest.log" ok skipped
  ok=$(grep -c '^\[       OK \] ' "$log")
  skipped=$(sed -n 's/^\[  SKIPPED \] \([^ ]*\) ([0-9]* ms)$/\1/p' "$log" | sort -u)
  amlp_log "$1: $ok tests passed in its shards, $(printf '%s' "$skipped" | grep -c .) skipped${skipped:+:}"
  [ -z "$skipped" ] || printf '  %s\n' $skipped >&2
}
# OpenBLAS's idle threads sleep at once instead of spinning on sched_yield for
# 2^28 cycles after each GEMM (its default): on two cores shared by three test
# processes the spin was the release suites' and the ASan suite's sys time
# (a quick.ini run under ASan: 2.5 CPU-seconds, 1.6 with this; the ASan suite
# 142, 115). It changes no result.
export OPENBLAS_THREAD_TIMEOUT=4
# A shard that waits (a signal a second later, a FIFO nobody writes, mpirun
# starting its ranks) leaves its core to a third.
san_jobs=$((jobs + 1))

# Each sanitizer build is built in the background (amlp_build_start, at low
# priority) while the suites before it run: TSan's beside the release suites,
# ASan's beside TSan's suites, the two suites with the most idle time.
amlp_build build
[ "$fast" = 1 ] || amlp_build_start build-tsan "${sanitizer_args[@]}" -DASYNCMLP_SANITIZE=thread
amlp_phase "tests (release build)"
(cd build && ctest --output-on-failure -j "$jobs")
amlp_phase "the installed library" \
  "the installed library: cmake --install into a fresh prefix, examples/ built against it and run"
bash tools/check_install.sh build

if [ "$fast" = 0 ]; then
  amlp_build_wait build-tsan
  amlp_build_start build-asan "${sanitizer_args[@]}" -DASYNCMLP_SANITIZE=address
  amlp_phase "tests under TSan"
  (cd build-tsan && ctest --output-on-failure -j "$san_jobs")
  shards_summary build-tsan
  amlp_build_wait build-asan
  amlp_phase "tests under ASan+UBSan"
  (cd build-asan && ctest --output-on-failure -j "$san_jobs")
  shards_summary build-asan
fi
amlp_log "all tests passed"
amlp_phase_table
# The README's figures for this command from a fresh clone on two cores ("| `bash
# tools/test.sh` | N min ...; M min where ccache ..."): N where this run compiled
# (fewer than 9 in 10 of its compiles were ccache's copies), M where it copied. This
# run's time beside the one it is, when this run is one.
if [ "$fresh" = 1 ] && [ "$fast" = 0 ] && [ "$jobs" = 2 ]; then
  read -r hits1 misses1 < <(ccache_counts)
  hits=$((hits1 - hits0)) misses=$((misses1 - misses0))
  row=$(grep '^| `bash tools/test.sh` | ' README.md | head -1)
  said=$(printf '%s\n' "$row" | sed -n 's/^| `bash tools\/test.sh` | \([0-9.]*\) min .*/\1/p')
  if [ $((10 * hits)) -ge $((9 * (hits + misses))) ] && [ "$hits" -gt 0 ]; then
    kind="its compiles ccache's copies ($hits of $((hits + misses)))"
    said=$(printf '%s\n' "$row" | sed -n 's/.*; \([0-9.]*\) min where ccache .*/\1/p')
  elif [ $((hits + misses)) = 0 ]; then
    kind="compiling (no ccache)"
  else
    kind="compiling ($misses of $((hits + misses)) compiles not in ccache)"
  fi
  if [ -n "$said" ]; then
    awk -v s="$SECONDS" -v m="$said" -v k="$kind" 'BEGIN {
      r = s / (60 * m);
      printf "==> from a fresh clone on 2 cores, %s: %.1f min; the README says %s min (%.2fx: %s)\n", k, s / 60, m, r,
             (r <= 2 && r >= 0.5) ? "within 2x" : "NOT within 2x: a loaded machine, or the README is stale" }' >&2
  fi
fi
