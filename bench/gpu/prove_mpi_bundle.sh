#!/usr/bin/env bash
# prove_mpi_bundle.sh — shows here that the archive's OpenMPI runs on its own:
# unpacks ARCHIVE into a scratch directory (not the build's), hides this
# machine's OpenMPI and PMIx (their directories, launchers and libraries,
# in a private mount namespace: needs root and unshare), then runs a 2-rank
# CPU job of train_mlp --distributed mpi with only the bundle, relocated by
# OPAL_PREFIX. Exit status: the job's.
#
#   bench/gpu/prove_mpi_bundle.sh [ARCHIVE]      (default: build-gpu.tar.xz)
set -euo pipefail
cd "$(dirname "$0")/../.."
archive=$(realpath "${1:-build-gpu.tar.xz}")
[ -f "$archive" ] || { echo "prove_mpi_bundle.sh: no $archive (bench/gpu/pack.sh makes it)" >&2; exit 2; }
if [ "${AMLP_HIDDEN:-0}" != 1 ]; then
  [ "$(id -u)" = 0 ] || { echo "prove_mpi_bundle.sh: needs root (a private mount namespace)" >&2; exit 2; }
  exec env AMLP_HIDDEN=1 unshare -m --propagation private bash "$0" "$archive"
fi
scratch=$(mktemp -d)
tar -xJf "$archive" -C "$scratch" build-gpu
empty=$(mktemp -d)
for d in /usr/lib/x86_64-linux-gnu/openmpi /usr/share/openmpi /usr/lib/x86_64-linux-gnu/pmix2 /etc/openmpi; do
  [ -d "$d" ] && mount --bind "$empty" "$d"
done
for f in /usr/bin/orterun /usr/bin/orted /usr/bin/ompi_info \
  /usr/lib/x86_64-linux-gnu/lib{open-rte,open-pal,mpi,pmix,hwloc,event_core,event_pthreads}*.so*; do
  [ -f "$f" ] && [ ! -L "$f" ] && mount --bind /dev/null "$f"
done
b=$scratch/build-gpu
export LD_LIBRARY_PATH=$b/rt OPAL_PREFIX=$b/mpi PATH=$b/mpi/bin:$PATH PMIX_MCA_mca_base_component_path=$b/mpi/pmix
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader
echo "unpacked in $scratch; this machine's OpenMPI hidden: $(ls /usr/lib/x86_64-linux-gnu/openmpi | wc -l) files left in its libdir"
echo "mpirun: $(command -v mpirun), $(mpirun --version | head -1); train_mlp's libmpi: $(ldd "$b/bin/train_mlp" | awk '/libmpi\./ {print $3}')"
mpirun --oversubscribe -np 2 "$b/bin/train_mlp" --distributed mpi --device cpu --config configs/quick.ini \
  --batches 20 --quiet --summary-json "$scratch/mpi2.json"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print("ranks:", len(d[0].get("ranks", [])), "final loss:", d[0]["final_loss"])' "$scratch/mpi2.json" 2>/dev/null || true
