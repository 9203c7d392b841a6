#!/usr/bin/env bash
# bundle_runtime.sh — copies the shared libraries that the executables under a
# build folder need and that a bare GPU machine lacks (OpenBLAS, Boost,
# gfortran, ...) into BUILD/rt, so the build folder runs there with
#   LD_LIBRARY_PATH=$PWD/BUILD/rt:/usr/local/cuda/lib64:<NCCL's folder>
# Left out: CUDA's own libraries and the C/C++ runtime (the GPU machine has
# its own, CUDA 13 as the nvcc here) and NCCL (hundreds of MB; the GPU
# machine has one in PyTorch's environment, found by gpu_kit.py).
# Usage: bench/gpu/bundle_runtime.sh [BUILD_DIR]   (default: build-gpu)
set -euo pipefail
build=${1:-build-gpu}
rt="$build/rt"
[ -d "$build/bin" ] || { echo "bundle_runtime.sh: no $build/bin: build first" >&2; exit 2; }
mkdir -p "$rt"
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|librt\.|libpthread\.|libstdc\+\+|libgcc_s|libcuda\.|libcudart|libcublas|libcublasLt|libcurand|libnvrtc|libnvJitLink|libnccl\.)'
found=0
while IFS= read -r -d '' exe; do
  file -b "$exe" | grep -q '^ELF' || continue
  found=1
  ldd "$exe" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
    while read -r name path; do
      [[ $name =~ $skip ]] && continue
      [ -e "$rt/$name" ] || cp -L "$path" "$rt/$name"
    done
done < <(find "$build/bin" -type f -perm -u+x -print0)
[ "$found" = 1 ] || { echo "bundle_runtime.sh: no executables under $build/bin" >&2; exit 1; }
ls "$rt"
