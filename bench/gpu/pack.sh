#!/usr/bin/env bash
# pack.sh — the one file carried to the GPU machine: BUILD's executables
# (stripped), the non-CUDA libraries they need (bundle_runtime.sh), the
# configs and the kit's scripts, as one xz archive ARCHIVE (default
# build-gpu.tar.xz at the repository root: an ignored path, carried with
# the run tool's `carry`). Inside, the build is always build-gpu/{bin,rt},
# whatever BUILD's name here; run_gpu_checks.sh's first phase (unpack)
# unpacks it at the repository root.
#
#   cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90
#   cmake --build build-gpu -j2
#   bench/gpu/pack.sh [BUILD [ARCHIVE]]
#
# Fails when the archive is not well under the 64 MiB that travels (48 MiB).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-gpu}
archive=${2:-build-gpu.tar.xz}
limit=$((48 << 20))
[ -d "$build/bin" ] || { echo "pack.sh: no $build/bin: build it first (see the header)" >&2; exit 2; }
grep -q 'ASYNCMLP_CUDA:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null ||
  { echo "pack.sh: $build is not a CUDA build (-DASYNCMLP_CUDA=ON)" >&2; exit 2; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
to=$stage/build-gpu
mkdir -p "$to/bin" "$stage/bench"
for exe in "$build"/bin/*; do
  [ -f "$exe" ] && [ -x "$exe" ] || continue
  strip -o "$to/bin/$(basename "$exe")" "$exe"
done
bench/gpu/bundle_runtime.sh "$build" >/dev/null
cp -r "$build/rt" "$to/rt"
cp -r configs tools "$stage/"
cp -r bench/gpu "$stage/bench/gpu"
tar -C "$stage" -cf - . | xz -T2 -6 >"$archive.part"
mv "$archive.part" "$archive"
size=$(stat -c %s "$archive")
printf 'pack.sh: %s: %.1f MiB (unpacked %s): %d executables, %d libraries\n' "$archive" \
  "$(echo "$size / 1048576" | bc -l)" "$(du -sh "$stage" | cut -f1)" \
  "$(ls "$to/bin" | wc -l)" "$(ls "$to/rt" | wc -l)"
[ "$size" -lt "$limit" ] || { echo "pack.sh: $archive is over 48 MiB: carry less" >&2; exit 1; }
