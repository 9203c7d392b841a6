#!/usr/bin/env bash
# fuzz.sh — fuzzes one of the file readers with libFuzzer under ASan and UBSan
# for SECONDS (default 180), starting from its corpus in tests/data/:
#
#   bash tools/fuzz.sh npy [SECONDS] [--update-corpus]           # train/options/npy_file.cpp
#   bash tools/fuzz.sh safetensors [SECONDS] [--update-corpus]   # framework/nn/safetensors.cpp
#
# npy: tests/data/npy_corpus, files numpy.save wrote (valid ones of each format
# version, and wrong ones). safetensors: tests/data/safetensors_corpus, files
# train_mlp --save wrote and files written by hand (one per rule of the format).
# A benchmark-like check, not part of CI. Prints the run's executions,
# executions per second, corpus size and crashes (a crash leaves its input in
# build-fuzz/ and the script exits 1). --update-corpus merges the inputs that
# found new coverage back into the tree's corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-}
seconds=${2:-180}
update=0
[ "${3:-}" = --update-corpus ] && update=1
case "$target" in
  npy) sources=(train/options/npy_file.cpp framework/util/parse.cpp) ;;
  safetensors) sources=(framework/nn/safetensors.cpp framework/util/read_input.cpp framework/util/parse.cpp) ;;
  *) echo "fuzz.sh: which reader? npy or safetensors (got '$target')" >&2; exit 2 ;;
esac
command -v clang++ >/dev/null || { echo "fuzz.sh: needs clang++ (apt-get install clang)" >&2; exit 2; }
name=fuzz_$target
corpus=tests/data/${target}_corpus
mkdir -p build-fuzz
rm -f build-fuzz/crash-* build-fuzz/leak-* build-fuzz/timeout-*  # this run's findings only
clang++ -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I. \
  "bench/fuzz/$name.cpp" "${sources[@]}" -o "build-fuzz/$name"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$corpus"/* "$work/"
start=$SECONDS
set +e
"build-fuzz/$name" -max_total_time="$seconds" -max_len=4096 -artifact_prefix=build-fuzz/ -print_final_stats=1 \
  "$work" >"build-fuzz/$name.log" 2>&1
rc=$?
set -e
runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "build-fuzz/$name.log" | grep -o '[0-9]*$' || echo 0)
crashes=$(find build-fuzz -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \) | wc -l)
echo "$name: $((SECONDS - start)) s, $runs executions ($((runs / (SECONDS - start + 1))) per second), corpus $(ls "$work" | wc -l) inputs (from $(ls "$corpus" | wc -l)), $crashes crashes (libFuzzer exit $rc)"
if [ "$update" = 1 ]; then
  "build-fuzz/$name" -merge=1 "$corpus" "$work" >>"build-fuzz/$name.log" 2>&1
  echo "$name: $corpus now $(ls "$corpus" | wc -l) inputs"
fi
[ "$rc" = 0 ] && [ "$crashes" = 0 ]
