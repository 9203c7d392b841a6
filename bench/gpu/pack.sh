#!/usr/bin/env bash
# pack.sh — the one file carried to the GPU machine: BUILD's executables
# (stripped), the non-CUDA libraries they need (bundle_runtime.sh), OpenMPI's
# mpirun relocatable (bundle_mpi.sh, where OpenMPI is installed here), the
# commit it was built from (build-gpu/COMMIT), the list of test executables
# that touch CUDA (build-gpu/cuda_tests.txt: those whose tests or source
# name CUDA, a GPU or NCCL), the Python module where the build made one
# (build-gpu/python), and what the kit and the tests read from the tree
# (configs, tools, docs, examples, the tests' data folders, the kit's
# scripts; a run from the unpacked archive alone finds them), as one xz
# archive ARCHIVE (default
# build-gpu.tar.xz at the repository root: an ignored path, carried with
# the run tool's `carry`). Inside, the build is always build-gpu/{bin,rt},
# whatever BUILD's name here; gpu_kit.py's first step (quick's unpack)
# unpacks it at the repository root.
#
#   cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90
#   cmake --build build-gpu -j2
#   bench/gpu/pack.sh [BUILD [ARCHIVE]]
#
# Fails when the archive is 48 MiB or more (64 MiB travels in all, the
# working tree beside it).
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
if command -v ompi_info >/dev/null; then
  bench/gpu/bundle_mpi.sh "$build"
  cp -r "$build/mpi" "$to/mpi"
  strip "$to/mpi/bin/"* 2>/dev/null || true
else
  echo "pack.sh: no OpenMPI here (openmpi-bin): the archive has no mpirun" >&2
fi
cp -r "$build/rt" "$to/rt"
[ -d "$build/python" ] && cp -r "$build/python" "$to/python"
# The commit, and whether the tree had changes the commit does not hold.
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit+=" with uncommitted changes"
echo "$commit (packed $(date -u +%FT%TZ))" >"$to/COMMIT"
for t in "$build"/bin/test_*; do
  n=$(basename "$t")
  if "$t" --gtest_list_tests 2>/dev/null | grep -qiE 'cuda|gpu|nccl' ||
    grep -qiE 'cuda|gpu|nccl' -r "tests/${n#test_}" --include='test_*.cpp' 2>/dev/null; then
    echo "$n"
  fi
done >"$to/cuda_tests.txt"
cp -r configs tools docs examples "$stage/"
cp -r bench/gpu "$stage/bench/gpu"
data=$(cd tests && find . -type d -name data -not -path '*/data/*' | sed 's|^\./|tests/|' | sort)
for d in $data; do
  mkdir -p "$stage/$(dirname "$d")"
  cp -r "$d" "$stage/$d"
done
tar -C "$stage" -cf - build-gpu configs tools docs examples tests bench | xz -T2 -6 >"$archive.part"
mv "$archive.part" "$archive"
size=$(stat -c %s "$archive")
printf 'pack.sh: %s: %.1f MiB (unpacked %s): %d executables, %d libraries, %d CUDA test executables, commit %s\n' \
  "$archive" "$(echo "$size / 1048576" | bc -l)" "$(du -sh "$stage" | cut -f1)" \
  "$(ls "$to/bin" | wc -l)" "$(ls "$to/rt" | wc -l)" "$(wc -l <"$to/cuda_tests.txt")" "$(cat "$to/COMMIT")"
[ "$size" -lt "$limit" ] || { echo "pack.sh: $archive is 48 MiB or more: carry less" >&2; exit 1; }
