# tools/setup.sh — sourced by run.sh and test.sh: installs what is missing
# (Debian packages; needs root or sudo), then configures and builds one build
# folder. Quick when nothing changed: dpkg checks and an incremental build.
#
#   amlp_install_deps
#   amlp_build BUILD_DIR [extra cmake args...]
#   "$(amlp_python)" tools/plot_memory.py ...     # an interpreter that sees matplotlib
set -euo pipefail

AMLP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AMLP_PACKAGES=(cmake ninja-build g++ pkg-config libboost-program-options-dev libopenblas-dev
               libgtest-dev libbenchmark-dev nlohmann-json3-dev python3 python3-matplotlib
               openmpi-bin libopenmpi-dev)

# The interpreter for tools/plot_memory.py: Debian's, which sees python3-matplotlib (a python3
# earlier on PATH, such as a virtual environment's, may not), else python3.
amlp_python() { if [ -x /usr/bin/python3 ]; then echo /usr/bin/python3; else echo python3; fi; }

amlp_log() { printf '\033[1m==> [%4ds] %s\033[0m\n' "$SECONDS" "$*" >&2; }  # seconds since the script started

amlp_install_deps() {
  local missing=()
  for p in "${AMLP_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    amlp_log "installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  # The CUDA Toolkit (nvcc, cuRAND, cuBLAS) lives in /usr/local/cuda on our machines.
  if [ -z "${CUDACXX:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then export CUDACXX=/usr/local/cuda/bin/nvcc; fi
  if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null; then
    amlp_log "no nvcc found: building without the CUDA backend"
    AMLP_NO_CUDA=1
  fi
}

# CUDA architectures: native Hopper plus 75 (PTX runs on anything newer);
# CI builds one to stay fast.
amlp_cuda_archs() {
  if [ "${CI:-}" = true ]; then echo "90"; else echo "75;90"; fi
}

amlp_build() {
  local dir=$1; shift
  local args=(-G Ninja -DCMAKE_BUILD_TYPE=Release)
  if [ "${AMLP_NO_CUDA:-0}" = 1 ]; then args+=(-DASYNCMLP_CUDA=OFF); else args+=("-DCMAKE_CUDA_ARCHITECTURES=$(amlp_cuda_archs)"); fi
  if [ ! -f "$AMLP_ROOT/$dir/build.ninja" ]; then
    amlp_log "configuring $dir"
    cmake -S "$AMLP_ROOT" -B "$AMLP_ROOT/$dir" "${args[@]}" "$@" >"$AMLP_ROOT/$dir.configure.log" 2>&1 ||
      { cat "$AMLP_ROOT/$dir.configure.log" >&2; return 1; }
  fi
  amlp_log "building $dir"
  # pipefail: the pipeline fails exactly when the build does (the filter never fails).
  if ! cmake --build "$AMLP_ROOT/$dir" -j "$(nproc)" 2>&1 | { grep -vE '^\[[0-9]+/[0-9]+\] ' || true; }; then
    amlp_log "building $dir failed"
    return 1
  fi
}
