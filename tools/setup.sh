# tools/setup.sh — sourced by run.sh and test.sh: installs what is missing
# (Debian packages; needs root or sudo), then configures and builds one build
# folder. Quick when nothing changed: dpkg checks and an incremental build.
#
#   amlp_install_deps [more packages...]
#   amlp_build BUILD_DIR [extra cmake args...]    # every target of the build folder
#   AMLP_TARGETS="train_mlp" amlp_build build     # only these targets (and what they need)
#   amlp_build_start BUILD_DIR [args...]; ...; amlp_build_wait BUILD_DIR   # the same, in the background
#   amlp_phase "a step" ["its log line"]; ...; amlp_phase_table   # each phase's seconds, in a table at the end
#   "$(amlp_python)" tools/plot_memory.py ...     # an interpreter that sees matplotlib
set -euo pipefail

AMLP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AMLP_PACKAGES=(cmake ninja-build g++ pkg-config libboost-program-options-dev libopenblas-dev
               libgtest-dev libbenchmark-dev nlohmann-json3-dev python3 python3-matplotlib
               openmpi-bin libopenmpi-dev pybind11-dev python3-dev python3-numpy python3-pytest)
# What the test command adds: the wheel and its venv (tools/python_venv.sh), the
# notebook's executor (tests/python/test_notebook.py), and ccache, with which a build
# of sources compiled before, in this clone or another, is copies (amlp_build).
AMLP_TEST_PACKAGES=(python3-pip python3-setuptools python3-wheel python3-venv python3-nbclient python3-nbformat
                    python3-ipykernel ccache)

# The interpreter for tools/plot_memory.py: Debian's, which sees python3-matplotlib (a python3
# earlier on PATH, such as a virtual environment's, may not), else python3.
amlp_python() { if [ -x /usr/bin/python3 ]; then echo /usr/bin/python3; else echo python3; fi; }

amlp_log() { printf '\033[1m==> [%4ds] %s\033[0m\n' "$SECONDS" "$*" >&2; }  # seconds since the script started

# Phases: a phase lasts from its amlp_phase to the next (or to amlp_phase_table);
# amlp_phase_table prints each one's seconds (the scripts' last lines), so a slow
# step is seen at once.
AMLP_PHASES=()
amlp_phase_name=""
amlp_phase_start=0
amlp_phase_end() {
  [ -n "$amlp_phase_name" ] || return 0
  local took=$((SECONDS - amlp_phase_start))
  AMLP_PHASES+=("$(printf '%5d s  %s' "$took" "$amlp_phase_name")")
  amlp_phase_name=""
}
amlp_phase() {  # NAME [LINE]: the phase's name in the table; LINE (default NAME) logged as it starts
  amlp_phase_end
  amlp_phase_name=$1
  amlp_phase_start=$SECONDS
  amlp_log "${2:-$1}"
}
amlp_phase_table() {
  amlp_phase_end
  printf '\033[1m==> [%4ds] where the time went:\033[0m\n' "$SECONDS" >&2
  printf '    %s\n' "${AMLP_PHASES[@]}" >&2
}

amlp_install_deps() {  # [more packages...]: AMLP_PACKAGES and these
  amlp_phase "checking packages"
  amlp_install_packages "${AMLP_PACKAGES[@]}" "$@"
  # The CUDA Toolkit (nvcc, cuRAND, cuBLAS) lives in /usr/local/cuda on our machines.
  if [ -z "${CUDACXX:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then export CUDACXX=/usr/local/cuda/bin/nvcc; fi
  if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null; then
    amlp_log "no nvcc found: building without the CUDA backend"
    AMLP_NO_CUDA=1
  fi
}

amlp_install_packages() {  # PACKAGES...: those not installed yet, with apt-get
  local missing=()
  for p in "$@"; do
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
}

amlp_build() {
  local dir=$1; shift
  local args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DASYNCMLP_WERROR=ON)
  # CUDA architectures: CMakeLists.txt's default (the GPUs the machine has, else Hopper
  # with its PTX), one compile of each kernel.
  [ "${AMLP_NO_CUDA:-0}" = 1 ] && args+=(-DASYNCMLP_CUDA=OFF)
  # ccache when it is installed (test.sh installs it; run.sh does not need it): a compile
  # done before with the same flags and sources, in any build folder or clone, is a copy.
  # Paths under the clone are hashed relative to it (base_dir, hash_dir false; the unity
  # sources name their files from the root, cmake/unity.cmake), so a fresh clone hits
  # what another clone compiled. Depend mode: a miss costs no preprocessor run (the
  # compiler's dependency file names the headers). Precompiled headers are off under it: CMake
  # passes them by absolute path inside -Xclang, which ccache cannot make relative, and a
  # header precompiled in one clone names that clone's files, so every test source would
  # miss.
  if command -v ccache >/dev/null; then
    local launcher="env;CCACHE_BASEDIR=$AMLP_ROOT;CCACHE_NOHASHDIR=true;CCACHE_DEPEND=true;ccache"
    args+=(-DCMAKE_C_COMPILER_LAUNCHER="$launcher" -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher"
           -DCMAKE_CUDA_COMPILER_LAUNCHER="$launcher" -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON)
  fi
  # clang when it is installed (test.sh installs it) and no compiler is named (CXX or an
  # argument): the release build in 0.58x gcc's compiler-seconds (212 against 368 on
  # two cores, the CUDA backend aside, whose host compiler stays nvcc's default).
  if [ -z "${CXX:-}" ] && [[ " $* " != *" -DCMAKE_CXX_COMPILER="* ]] && command -v clang++ >/dev/null &&
     command -v clang >/dev/null; then
    args+=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++)
  fi
  args+=("$@")
  # A folder configured with other arguments (another compiler, say, which CMake
  # cannot switch in place) is configured afresh.
  local said="$AMLP_ROOT/$dir/amlp-configure-args.txt"
  if [ -f "$AMLP_ROOT/$dir/build.ninja" ] && [ "$(cat "$said" 2>/dev/null)" != "${args[*]}" ]; then
    amlp_log "$dir was configured with other arguments: configuring it afresh"
    rm -rf "${AMLP_ROOT:?}/$dir"
  fi
  if [ ! -f "$AMLP_ROOT/$dir/build.ninja" ]; then
    amlp_phase "configuring $dir"
    cmake -S "$AMLP_ROOT" -B "$AMLP_ROOT/$dir" "${args[@]}" >"$AMLP_ROOT/$dir.configure.log" 2>&1 ||
      { cat "$AMLP_ROOT/$dir.configure.log" >&2; return 1; }
    printf '%s\n' "${args[*]}" >"$said"
  fi
  local targets=()
  [ -z "${AMLP_TARGETS:-}" ] || targets=(--target $AMLP_TARGETS)
  amlp_phase "building $dir${AMLP_TARGETS:+ ($AMLP_TARGETS)}"
  # pipefail: the pipeline fails exactly when the build does (the filter never fails).
  if ! cmake --build "$AMLP_ROOT/$dir" -j "$(nproc)" "${targets[@]}" 2>&1 | { grep -vE '^\[[0-9]+/[0-9]+\] ' || true; }; then
    amlp_log "building $dir failed"
    return 1
  fi
}

# A build in the background, at low priority (nice 10), while the foreground runs
# tests: it takes the cores the tests leave idle (a test waiting on a child, a pipe
# or a timer; the last long tests of a suite) and little from the tests. Its output
# goes to BUILD_DIR.build.log, shown if it fails; amlp_build_wait puts its seconds in
# the phase table.
declare -A AMLP_BG_PID AMLP_BG_START
amlp_build_start() {  # BUILD_DIR [args...]: as amlp_build
  local dir=$1
  amlp_log "building $dir in the background (its output: $dir.build.log)"
  AMLP_BG_START[$dir]=$SECONDS
  # A process group of its own (set -m), which a failing or interrupted script ends.
  set -m
  ( renice -n 10 -p "$BASHPID" >/dev/null; amlp_build "$@" ) >"$AMLP_ROOT/$dir.build.log" 2>&1 &
  AMLP_BG_PID[$dir]=$!
  set +m
  trap 'for p in "${AMLP_BG_PID[@]}"; do kill -- "-$p" 2>/dev/null || true; done' EXIT
}
amlp_build_wait() {  # BUILD_DIR: waits for it; fails, showing its output, where it failed
  local dir=$1 rc=0
  amlp_phase "waiting for $dir's build"
  wait "${AMLP_BG_PID[$dir]}" || rc=$?
  unset "AMLP_BG_PID[$dir]"
  AMLP_PHASES+=("$(printf '%5d s  (building %s, begun in the background)' \
                  "$((SECONDS - AMLP_BG_START[$dir]))" "$dir")")
  if [ "$rc" != 0 ]; then
    tail -40 "$AMLP_ROOT/$dir.build.log" >&2
    amlp_log "building $dir failed (all of its output: $dir.build.log)"
    return 1
  fi
}
