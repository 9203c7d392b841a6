#!/usr/bin/env bash
# bundle_mpi.sh — OpenMPI's launcher, relocatable, for a machine without
# OpenMPI: `mpirun` (orterun) and `orted` into BUILD/mpi/bin, the MCA
# components and help files at the same places under BUILD/mpi as under this
# machine's prefix, PMIx's components under BUILD/mpi/pmix, and every library
# they need that a bare machine lacks into BUILD/rt (beside bundle_runtime.sh's).
# There, with BUILD/rt on LD_LIBRARY_PATH:
#   export OPAL_PREFIX=$PWD/BUILD/mpi PATH=$PWD/BUILD/mpi/bin:$PATH
#   export PMIX_MCA_mca_base_component_path=$PWD/BUILD/mpi/pmix
# (bench/gpu/gpu_kit.py does so). OPAL_PREFIX makes OpenMPI look for
# its components and help files under the new prefix instead of its own.
# Usage: bench/gpu/bundle_mpi.sh [BUILD_DIR]   (default: build-gpu)
set -euo pipefail
build=${1:-build-gpu}
command -v ompi_info >/dev/null && command -v mpirun >/dev/null ||
  { echo "bundle_mpi.sh: no OpenMPI here (openmpi-bin)" >&2; exit 2; }
[ -d "$build" ] || { echo "bundle_mpi.sh: no $build" >&2; exit 2; }
path() { ompi_info --path "$1" --parsable | sed -n "s/^path:$1://p"; }
prefix=$(path prefix)
libdir=$(path libdir) pkglibdir=$(path pkglibdir) pkgdatadir=$(path pkgdatadir)
rel() {  # a path under the prefix, relative to it
  case $1 in "$prefix"/*) echo "${1#"$prefix"/}" ;; *) echo "bundle_mpi.sh: $1 is not under $prefix" >&2; exit 1 ;; esac
}
mpi=$build/mpi rt=$build/rt
rm -rf "$mpi"
mkdir -p "$mpi/bin" "$mpi/$(rel "$pkglibdir")" "$mpi/$(dirname "$(rel "$pkgdatadir")")" "$mpi/pmix" "$rt"
cp -L "$(command -v mpirun)" "$mpi/bin/mpirun"
orted=$(dirname "$(readlink -f "$(command -v mpirun)")")/orted
[ -x "$orted" ] && cp -L "$orted" "$mpi/bin/orted"
cp -rL "$pkgdatadir" "$mpi/$(rel "$pkgdatadir")"
# The MCA components whose libraries all resolve here (the rest would only
# fail to load there too).
for so in "$pkglibdir"/*.so; do
  ldd "$so" 2>/dev/null | grep -q 'not found' && continue
  cp -L "$so" "$mpi/$(rel "$pkglibdir")/"
done
# PMIx (OpenMPI's runtime talks to it): its own components.
pmix_lib=$(ldd "$pkglibdir"/mca_pmix_ext*.so 2>/dev/null | awk '$1 ~ /^libpmix/ {print $3; exit}')
if [ -n "$pmix_lib" ]; then
  pmix_dir=$(dirname "$(readlink -f "$pmix_lib")")
  for d in "$pmix_dir/pmix" /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix; do
    [ -d "$d" ] && { cp -L "$d"/*.so "$mpi/pmix/"; break; }
  done
fi
# Every library they need that a bare machine lacks (the C runtime, CUDA and
# NCCL are there).
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|librt\.|libpthread\.|libstdc\+\+|libgcc_s|libcuda\.|libcudart|libcublas|libcublasLt|libcurand|libnvrtc|libnvJitLink|libnccl\.)'
for f in "$mpi"/bin/* "$mpi/$(rel "$pkglibdir")"/*.so "$mpi"/pmix/*.so; do
  ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
    while read -r name p; do
      [[ $name =~ $skip ]] && continue
      [ -e "$rt/$name" ] || cp -L "$p" "$rt/$name"
    done
done
printf 'bundle_mpi.sh: %s: mpirun, %d MCA components, %d PMIx components, %s\n' "$mpi" \
  "$(ls "$mpi/$(rel "$pkglibdir")" | wc -l)" "$(ls "$mpi/pmix" | wc -l)" "$(du -sh "$mpi" | cut -f1)"
