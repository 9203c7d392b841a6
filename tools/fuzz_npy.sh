#!/usr/bin/env bash
# fuzz_npy.sh — fuzzes the .npy reader (train/options/npy_file.cpp) with
# libFuzzer under ASan and UBSan for SECONDS (default 180), starting from the
# corpus in tests/data/npy_corpus (files numpy.save wrote: valid ones of each
# format version, and wrong ones). A benchmark-like check, not part of CI:
#
#   bash tools/fuzz_npy.sh [SECONDS] [--update-corpus]
#
# Prints the run's executions, executions per second and crashes (a crash
# leaves its input in build-fuzz/ and the script exits 1). --update-corpus
# merges the inputs that found new coverage back into the tree's corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-180}
update=0
[ "${2:-}" = --update-corpus ] && update=1
command -v clang++ >/dev/null || { echo "fuzz_npy.sh: needs clang++ (apt-get install clang)" >&2; exit 2; }
mkdir -p build-fuzz
rm -f build-fuzz/crash-* build-fuzz/leak-* build-fuzz/timeout-*  # this run's findings only
clang++ -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I. \
  bench/fuzz/fuzz_npy.cpp train/options/npy_file.cpp framework/core/parse.cpp -o build-fuzz/fuzz_npy
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp tests/data/npy_corpus/* "$work/"
start=$SECONDS
set +e
build-fuzz/fuzz_npy -max_total_time="$seconds" -max_len=4096 -artifact_prefix=build-fuzz/ -print_final_stats=1 \
  "$work" >build-fuzz/fuzz_npy.log 2>&1
rc=$?
set -e
runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' build-fuzz/fuzz_npy.log | grep -o '[0-9]*$' || echo 0)
crashes=$(find build-fuzz -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \) | wc -l)
echo "fuzz_npy: $((SECONDS - start)) s, $runs executions ($((runs / (SECONDS - start + 1))) per second), corpus $(ls "$work" | wc -l) inputs, $crashes crashes (libFuzzer exit $rc)"
if [ "$update" = 1 ]; then
  build-fuzz/fuzz_npy -merge=1 tests/data/npy_corpus "$work" >>build-fuzz/fuzz_npy.log 2>&1
  echo "fuzz_npy: tests/data/npy_corpus now $(ls tests/data/npy_corpus | wc -l) inputs"
fi
[ "$rc" = 0 ] && [ "$crashes" = 0 ]
