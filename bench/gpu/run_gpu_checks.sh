#!/usr/bin/env bash
# run_gpu_checks.sh — every check to make on a machine with a GPU, one phase
# per command, each well inside 10 minutes on a 16-core H100 machine and every
# step under its own `timeout`. Correctness first, then timings:
#
#   unpack      unpack the carried archive (pack.sh), print the machine, CUDA, NCCL
#   tests       every test executable, run directly (not by ctest: its files
#               hold the build machine's paths); a skip for want of a second
#               GPU is not a failure, a CUDA suite skipped for want of any is
#   memcheck    compute-sanitizer memcheck on the CUDA suites
#   racecheck   compute-sanitizer racecheck (shared memory: the reductions)
#   synccheck   compute-sanitizer synccheck (barriers)
#   train       train_mlp through NCCL, --compare-policies, async_demo on cuda
#   perf64, perf256, perf1024
#               train_mlp (--sync batch, none) beside PyTorch eager and PyTorch
#               with the whole step captured as a CUDA graph, alternated in the
#               same minutes, and the cuBLAS GEMM floor at that batch; the table last
#   table       the table of every perf phase run so far
#
#   bench/gpu/run_gpu_checks.sh --plan            what each phase runs, carries and brings back
#   bench/gpu/run_gpu_checks.sh PHASE [PHASE...]  from the repository root on the GPU machine;
#                                                 several share one 570 s budget (--plan: the three commands)
#
# Logs, JSON and CSV go to $LOGS/PHASE (default out/gpu/PHASE, kept between
# commands on a warm machine); as each phase ends they are packed into
# $OUT/PHASE.tar.xz (one file back per phase) and its results printed.
# Environment: BUILD (build-gpu), ARCHIVE (build-gpu.tar.xz), LOGS, OUT,
# REPEATS (3 alternated rounds), BATCHES (100), TESTS (the tests phase's
# executables, default every test_*). Exit status: 0 when every
# check of the phase passed, 1 otherwise, 2 on bad usage.
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 2
BUILD=${BUILD:-build-gpu}
ARCHIVE=${ARCHIVE:-build-gpu.tar.xz}
LOGS=${LOGS:-$PWD/out/gpu}
OUT=${OUT:-$LOGS/back}
REPEATS=${REPEATS:-3}
BATCHES=${BATCHES:-100}

# Phase, its bound in seconds (the sum of its steps' timeouts, packing
# included), and what it does; the bound stays under 570 s (one command: 600 s).
PHASES=(unpack tests memcheck racecheck synccheck train perf64 perf256 perf1024 table)
declare -A BOUND=([unpack]=300 [tests]=560 [memcheck]=560 [racecheck]=410 [synccheck]=410 [train]=530
  [perf64]=540 [perf256]=540 [perf1024]=540 [table]=40)
# What each is expected to take on an H100 (estimates from main's run there, for the lease).
declare -A EXPECT=([unpack]=30 [tests]=300 [memcheck]=300 [racecheck]=120 [synccheck]=100 [train]=60
  [perf64]=150 [perf256]=150 [perf1024]=170 [table]=5)
declare -A WHAT=([unpack]="unpack $ARCHIVE, print the machine, CUDA, cuBLAS/cuRAND, PyTorch, NCCL"
  [tests]="every $BUILD/bin/test_* directly, each under what is left of 540 s (300 s at most)"
  [memcheck]="compute-sanitizer memcheck: test_cuda_backend (run-ahead and 4096^3 tests left out), test_completion"
  [racecheck]="compute-sanitizer racecheck: test_cuda_backend Ops/*:CudaRandom.*:CudaErrors.*"
  [synccheck]="compute-sanitizer synccheck: test_cuda_backend Ops/*:CudaRandom.*:CudaErrors.*"
  [train]="train_mlp --devices cuda:0 (and every GPU) through NCCL, mpirun -np 1 --distributed mpi, --compare-policies, async_demo data-parallel"
  [perf64]="$REPEATS rounds (none started past 260 s) of train_mlp batch/none | torch eager + graph batch/none at batch 64; GEMM floor; table"
  [perf256]="the same at batch 256" [perf1024]="the same at batch 1024; and the device normals beside curandGenerateNormal"
  [table]="the table of every perf phase so far")

# memcheck leaves out, and why: the 4096^3 GEMM chains (50 GEMMs of 2*4096^3
# flops each, hours under memcheck's instrumentation) which are also the
# tests asserting run-ahead (the launches outrunning the GPU: under the
# sanitizer every launch is serialised, so run-ahead cannot show), and the
# deliberate cudaMalloc of twice the GPU (an API error by design).
MEMCHECK_SKIP='CudaQueue.WaitToReadWaitsForTheGpuNotJustTheLaunch:CudaQueue.LaunchedRunsAheadOfCompleted'
MEMCHECK_SKIP+=':CudaQueue.DeviceTimerMeasuresTheGpuNotTheLaunches:CudaQueue.AsyncCopyToPinnedMemoryIsReadyWhenTheGpuFinished'
MEMCHECK_SKIP+=':CudaMemory.AnImpossibleRequestIsOutOfMemoryAndTheProcessGoesOn'
KERNEL_TESTS='Ops/*:CudaRandom.*:CudaErrors.*'

# The kit as the lent machine runs it: three commands, phases in order.
COMMANDS=("unpack tests train" "memcheck racecheck synccheck" "perf64 perf256 perf1024 table")

usage() {
  local IFS='|'
  echo "usage: $0 --plan | PHASE [PHASE...], each one of: ${PHASES[*]}" >&2
  exit 2
}

plan() {
  local total=0 expect=0 size
  if [ -f "$ARCHIVE" ]; then
    size=$(stat -c %s "$ARCHIVE")
    printf 'carried: %s, %.1f MiB (limit 64 MiB)\n' "$ARCHIVE" "$(echo "$size / 1048576" | bc -l)"
  else
    echo "carried: $ARCHIVE not packed yet (bench/gpu/pack.sh $BUILD)"
  fi
  echo "run each from the repository root, carry=[\"$ARCHIVE\"]; each brings back \$OUT/PHASE.tar.xz"
  for p in "${PHASES[@]}"; do
    total=$((total + BOUND[$p]))
    expect=$((expect + EXPECT[$p]))
    printf '%-9s <= %3d s (about %3d s)  bench/gpu/run_gpu_checks.sh %-9s -> $OUT/%s.tar.xz\n' "$p" "${BOUND[$p]}" \
      "${EXPECT[$p]}" "$p" "$p"
    printf '          %s\n' "${WHAT[$p]}"
  done
  printf 'all phases: <= %d s (%.1f min) of commands at worst, about %d s (%.1f min) expected;\n' \
    "$total" "$(echo "$total / 60" | bc -l)" "$expect" "$(echo "$expect / 60" | bc -l)"
  echo "the lease is 30 min in all, its start included: past it, choose phases (tests, perf1024 first)"
  echo "the whole kit in three commands, each under one 570 s budget (a phase that no longer fits is not started):"
  local g sum p
  for g in "${COMMANDS[@]}"; do
    sum=0
    for p in $g; do sum=$((sum + EXPECT[$p])); done
    printf '  bench/gpu/run_gpu_checks.sh %-34s (about %3d s)\n' "$g" "$sum"
  done
}

# Several phases in one command (the lent machine's lease: at most three
# commands for the whole kit): each runs as its own invocation of this script,
# in order, under what is left of one 570 s budget; a phase whose expected
# time no longer fits is not started, and says so. Exit status: 1 if any
# phase failed or was not started.
if [ $# -gt 1 ]; then
  for p in "$@"; do [[ " ${PHASES[*]} " == *" $p "* ]] || usage; done
  budget_start=$SECONDS overall=0
  for p in "$@"; do
    left=$((570 - (SECONDS - budget_start)))
    if ((left < EXPECT[$p])); then
      echo "== $p not started: ${left} s left of 570, it takes about ${EXPECT[$p]} s" >&2
      overall=1
      continue
    fi
    PHASE_BUDGET=$((left < BOUND[$p] ? left : BOUND[$p])) timeout -k 5 "$left" bash "$0" "$p" || overall=1
  done
  exit $overall
fi

[ $# -eq 1 ] || usage
phase=$1
[ "$phase" = --plan ] && { plan; exit 0; }
[[ " ${PHASES[*]} " == *" $phase "* ]] || usage

# The seconds this phase may take: PHASE_BUDGET when several phases share one
# command, else the phase's own bound; cap B gives a step at most B seconds
# and never more than is left (10 s kept for packing).
phase_end=$((SECONDS + ${PHASE_BUDGET:-${BOUND[$phase]}}))
cap() {
  local left=$((phase_end - SECONDS - 10))
  ((left < 1)) && left=1
  echo $(($1 < left ? $1 : left))
}

dir=$LOGS/$phase
rm -rf "$dir"
mkdir -p "$dir" "$OUT"
results=$dir/results.txt
: >"$results"
status=0
say() { echo "== $*"; }
record() {  # PASS|FAIL name detail
  echo "$1 $2 ${3:-}" | tee -a "$results"
  [ "$1" = PASS ] || status=1
}
pack() {  # the phase's folder, as one archive back
  tar -C "$LOGS" -cJf "$OUT/$phase.tar.xz" "$phase" 2>/dev/null || echo "could not pack $dir" >&2
}
finish() {
  pack
  say "results ($phase)"
  cat "$results"
  exit $status
}

# NCCL from PyTorch's environment (the nvidia-nccl package), found once.
nccl_dir() {
  timeout 60 python3 -c 'import nvidia.nccl as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null
}
setup_env() {
  local nccl
  nccl=$(cat "$LOGS/nccl_dir" 2>/dev/null || true)
  [ -n "$nccl" ] || nccl=$(nccl_dir)
  export LD_LIBRARY_PATH=$PWD/$BUILD/rt:/usr/local/cuda/lib64${nccl:+:$nccl}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export ASYNCMLP_BLOCKING=0 ASYNCMLP_SOURCE_DIR=$PWD ASYNCMLP_BIN_DIR=$PWD/$BUILD/bin
}

if [ "$phase" = unpack ]; then
  say "unpack $ARCHIVE"
  if [ -f "$ARCHIVE" ] && timeout 120 tar -xJf "$ARCHIVE"; then
    record PASS unpack "$(ls "$BUILD/bin" | wc -l) executables, $(ls "$BUILD/rt" | wc -l) libraries"
  else
    record FAIL unpack "no $ARCHIVE or it does not unpack (bench/gpu/pack.sh makes it)"
  fi
  nccl=$(nccl_dir)
  echo "$nccl" >"$LOGS/nccl_dir"
  {
    timeout "$(cap 20)" nvidia-smi -L
    timeout "$(cap 20)" nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv
    timeout 20 nvcc --version | tail -2
    # shellcheck disable=SC2010
    ls /usr/local/cuda/lib64 | grep -E 'cublas|curand' | sort
    timeout 60 python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
"nccl", ".".join(map(str, torch.cuda.nccl.version())))' 2>&1
    echo "NCCL library: ${nccl:-not found}: $(ls "$nccl"/libnccl.so* 2>/dev/null | tr '\n' ' ')"
    echo "cores: $(nproc)"
  } 2>&1 | tee "$dir/machine.txt"
  [ -n "$nccl" ] && record PASS nccl "$nccl" || record FAIL nccl "not found in PyTorch's environment"
  finish
fi

[ -d "$BUILD/bin" ] || { echo "no $BUILD/bin: run the unpack phase first" >&2; exit 2; }
setup_env

if [ "$phase" = tests ]; then
  say "tests"
  start=$SECONDS
  tests=("$BUILD"/bin/test_*)
  if [ -n "${TESTS:-}" ]; then
    tests=()
    for n in $TESTS; do tests+=("$BUILD/bin/$n"); done
  fi
  for t in "${tests[@]}"; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    left=$(cap 540)
    if ((left < 30)); then
      record FAIL "$name" "not run: the phase's time was spent"
      continue
    fi
    timeout $((left < 300 ? left : 300)) "$t" --gtest_output="json:$dir/$name.json" >"$dir/$name.log" 2>&1
    rc=$?
    summary=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "$dir/$name.log" | tr -s ' \n' ' ')
    skipped=$(grep -E '^\[  SKIPPED \] [A-Za-z]' "$dir/$name.log" | awk '{print $4}' | sort -u | tr '\n' ' ')
    if [ $rc -ne 0 ]; then
      record FAIL "$name" "rc=$rc $summary"
    elif grep -qE 'no CUDA GPU visible|(has|built) without the CUDA backend|has no CUDA backend' "$dir/$name.log"; then
      record FAIL "$name" "$summary: CUDA tests skipped for want of a GPU on a GPU machine"
    else
      record PASS "$name" "$summary${skipped:+(skipped, not failures: $skipped)}"
    fi
  done
  grep -h '\[   INFO   \]' "$dir"/test_cuda_backend.log 2>/dev/null | tee "$dir/cuda_info.txt"
  finish
fi

sanitize() {  # tool test filter bound
  local tool=$1 t=$2 filter=$3 bound=$4 log
  log=$dir/$tool.$(basename "$t").log
  timeout "$(cap "$bound")" compute-sanitizer --tool "$tool" --error-exitcode 99 "$BUILD/bin/$t" --gtest_filter="$filter" \
    >"$log" 2>&1
  local rc=$? line tests
  line=$(grep -E '(ERROR|RACECHECK|SYNCCHECK) SUMMARY' "$log" | tail -1)
  tests=$(grep -E '^\[  PASSED  \] [0-9]+ test' "$log" | tr -s ' ')
  if [ $rc -eq 0 ]; then record PASS "$tool $t" "$tests $line"; else record FAIL "$tool $t" "rc=$rc $line"; fi
}

case $phase in
  memcheck)
    say "compute-sanitizer memcheck"
    # No --leak-check: the caching pools keep their blocks until exit by design.
    sanitize memcheck test_cuda_backend "-$MEMCHECK_SKIP" 420
    sanitize memcheck test_completion '*cuda*' 120
    finish
    ;;
  racecheck | synccheck)
    say "compute-sanitizer $phase"
    sanitize "$phase" test_cuda_backend "$KERNEL_TESTS" 390
    finish
    ;;
esac

if [ "$phase" = train ]; then
  say "train_mlp on cuda"
  gpus=$(timeout "$(cap 20)" nvidia-smi -L | grep -c '^GPU')
  [ "$gpus" -ge 1 ] || gpus=1  # nvidia-smi failed: train on cuda:0 alone
  list=$(seq -s, -f 'cuda:%g' 0 $((gpus - 1)))
  for devs in cuda:0 "$list"; do
    tag=${devs//[:,]/_}
    if timeout "$(cap 120)" "$BUILD/bin/train_mlp" --devices "$devs" --sync batch --batches 20 --batch-size 1024 \
      --memory-log "$dir/dp_$tag.csv" --summary-json "$dir/dp_$tag.json" >"$dir/dp_$tag.log" 2>&1; then
      record PASS "train_mlp --devices $devs" "$(grep -E 'samples/s|final loss' "$dir/dp_$tag.log" | tr -s ' \n' ' ')"
    else
      record FAIL "train_mlp --devices $devs" "see dp_$tag.log"
    fi
    [ "$devs" = "$list" ] && break
  done
  if timeout "$(cap 120)" "$BUILD/bin/async_demo" data-parallel --device cuda >"$dir/async_demo_dp.log" 2>&1; then
    record PASS "async_demo data-parallel"
  else
    record FAIL "async_demo data-parallel" "see async_demo_dp.log"
  fi
  # One rank under mpirun: --distributed mpi on the GPU (NCCL bootstrapped over MPI).
  if command -v mpirun >/dev/null; then
    if OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout "$(cap 120)" mpirun --oversubscribe -np 1 \
      "$BUILD/bin/train_mlp" --distributed mpi --device cuda --sync batch --batches 20 --batch-size 1024 \
      --summary-json "$dir/mpi1.json" >"$dir/mpi1.log" 2>&1; then
      record PASS "mpirun -np 1 train_mlp --distributed mpi" "$(grep -E 'samples/s|final loss' "$dir/mpi1.log" | tr -s ' \n' ' ')"
    else
      record FAIL "mpirun -np 1 train_mlp --distributed mpi" "see mpi1.log"
    fi
  else
    echo "NOTE mpirun -np 1 train_mlp --distributed mpi: not run, no mpirun on this machine" | tee -a "$results"
  fi
  if timeout "$(cap 150)" "$BUILD/bin/train_mlp" --config configs/d2l.ini --device cuda --compare-policies \
    --summary-json "$dir/policies.json" >"$dir/policies.log" 2>&1; then
    record PASS "train_mlp --compare-policies" "$(grep -E '^(enqueue|run) ' "$dir/policies.log" | tr -s ' \n' ' ')"
  else
    record FAIL "train_mlp --compare-policies" "see policies.log"
  fi
  finish
fi

if [[ $phase == perf* ]]; then
  batch=${phase#perf}
  say "batch $batch: $REPEATS rounds of train_mlp batch/none | PyTorch eager + graph batch/none, $BATCHES batches"
  # Kernels load at start-up (CUDA_MODULE_LOADING=EAGER), so the timed batches
  # time training, as PyTorch's warm-up batches do for the peers.
  start=$SECONDS
  for r in $(seq 1 "$REPEATS"); do
    if ((r > 1 && (SECONDS - start > 260 || $(cap 600) < 150))); then
      record FAIL "perf $batch round $r" "not started: 260 s spent, or under 150 s left"
      break
    fi
    for mode in batch none; do
      tag=train_${mode}_$r
      CUDA_MODULE_LOADING=EAGER timeout "$(cap 30)" "$BUILD/bin/train_mlp" --device cuda --sync "$mode" \
        --batches "$BATCHES" --batch-size "$batch" --summary-json "$dir/$tag.json" --memory-log "$dir/$tag.csv" \
        >"$dir/$tag.log" 2>&1 || record FAIL "train_mlp --sync $mode #$r" "see $tag.log"
    done
    timeout "$(cap 120)" python3 bench/gpu/torch_mlp.py --sync batch,none --capture eager,graph --batches "$BATCHES" \
      --batch-size "$batch" --repeats 2 --json "$dir/torch_$r.json" >"$dir/torch_$r.log" 2>&1 ||
      record FAIL "torch_mlp.py #$r" "see torch_$r.log"
  done
  say "GEMM floor at batch $batch (cuBLAS alone)"
  timeout "$(cap 45)" "$BUILD/bin/bench_cuda_gemm" --benchmark_filter="Floor/tf32:[01]/batch:$batch/" \
    --benchmark_min_time=0.1 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
    --benchmark_out="$dir/gemm_floor.json" --benchmark_out_format=json >"$dir/gemm_floor.log" 2>&1 ||
    record FAIL bench_cuda_gemm "see gemm_floor.log"
  if [ "$batch" = 1024 ]; then
    say "normals: the device generator beside curandGenerateNormal"
    if timeout "$(cap 40)" "$BUILD/bin/bench_cuda_random" --benchmark_min_time=0.1 --benchmark_out="$dir/normals.json" \
      --benchmark_out_format=json >"$dir/normals.log" 2>&1; then
      record PASS "normals vs curandGenerateNormal" "$(python3 - "$dir/normals.json" <<'PY'
import json, sys
b = {x["name"].split("/")[0] + "/" + x["name"].split("/")[1]: x["real_time"] for x in json.load(open(sys.argv[1]))["benchmarks"]}
print(" ".join(f"n={k.split('/')[1]}: {v / b['BM_CurandGenerateNormal/' + k.split('/')[1]]:.2f}x"
               for k, v in b.items() if k.startswith("BM_DeviceNormal/")) + " (time / cuRAND's; target <= 1.10)")
PY
)"
    else
      record FAIL bench_cuda_random "see normals.log"
    fi
  fi
  grep -q FAIL "$results" || record PASS "perf $batch" "$REPEATS rounds"
  pack
  say "results ($phase)"
  cat "$results"
  say "table"
  timeout "$(cap 15)" python3 bench/gpu/table.py "$dir" | tee "$dir/table.txt"
  pack
  exit $status
fi

if [ "$phase" = table ]; then
  timeout "$(cap 30)" python3 bench/gpu/table.py "$LOGS"/perf* | tee "$dir/table.txt"
  pack
  exit 0
fi
