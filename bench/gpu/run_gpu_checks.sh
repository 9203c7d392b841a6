#!/usr/bin/env bash
# run_gpu_checks.sh — the checks and timings to make on a lent GPU machine, in
# commands that each fit a share of a 15-minute lease (its start and idle
# time included): quick, then matrix, on the warm machine; deep in another.
#
#   quick  (<= 300 s, about 275)  unpack the carried archive (pack.sh), print the
#          machine and the commit the build came from; the CUDA-touching test
#          executables; train_mlp at batch 64 and 1024 (batch, none, --graph on
#          in both sync modes, TF32), two rounds alternated with PyTorch's
#          whole-step CUDA graph (FP32 and TF32); the cuBLAS floor at both
#          sizes, FP32 and TF32, and the SGD update and the ReLU passes beside a
#          device copy of their bytes; bench_op_cost with the raw-launch and
#          raw-capture floors; a traced `none` run (and a `--graph on` one)
#          through tools/trace_summary.py, the step kernel by kernel with the
#          idle gap before each; the goals table last
#   matrix (<= 300 s, about 270)  the candidates (CANDIDATES below: cuBLASLt's
#          epilogues, ASYNCMLP_CANDIDATES' kernels and worker_spin), each first checked by
#          test_cuda's cases with it on, then timed against the default in
#          alternated rounds at batch 64 and 1024, FP32 and TF32 (--graph on
#          --sync none): each one's ratio to the default per round, median
#          and spread (bench/gpu/matrix_table.py); a candidate becomes the
#          default only if it wins in every round
#   deep   (<= 300 s, about 285)  compute-sanitizer memcheck/racecheck/synccheck
#          on the kernels changed since the last GPU run (SANITIZE below), the
#          remaining test executables, mpirun -np 1 train_mlp --distributed mpi
#          against the one-process run, examples/chapter.py on the GPU,
#          bench_cuda_random, --compare-policies (enqueue, run, bounded),
#          --host-work match and --sweep on cuda
#
#   bench/gpu/run_gpu_checks.sh --plan         every step, its timeout and expected time
#   bench/gpu/run_gpu_checks.sh quick|matrix|deep  from the repository root on the GPU machine
#   bench/gpu/run_gpu_checks.sh quick STEP...  only those steps of it, in its order (a rerun:
#                                              quick unpack mpi)
#   bench/gpu/run_gpu_checks.sh table DIR [DIR] the goals table of a quick run's (and a matrix run's) logs
#   ASYNCMLP_KIT_DRY=1 bench/gpu/run_gpu_checks.sh quick|matrix|deep
#                                              walks every step here: what needs no GPU
#                                              runs, each GPU command is printed with
#                                              the timeout it would get, not run
#
# Every step runs under its own `timeout`, cut to what is left of the
# command's budget (a step whose expected time no longer fits is not started,
# and says so). Logs go to $LOGS/COMMAND (default out/gpu/COMMAND); after each
# step they are packed into $OUT/COMMAND.tar.xz, so a command stopped at its
# limit still brings back what it did. Environment: BUILD (build-gpu), ARCHIVE
# (build-gpu.tar.xz), LOGS, OUT, ROUNDS (2), MATRIX_ROUNDS (3), MODES_ONLY (the perf
# modes' tags to run; default all), TORCH_CAPTURE (graph), TESTS_ONLY
# (the test executables; default pack.sh's list), KIT_BUDGET (the command's budget in
# seconds; a dry run takes each step's expected time, so KIT_BUDGET=200 shows
# which steps a short budget leaves out). Exit status: 0 when every check
# passed, 1 otherwise, 2 on bad usage.
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 2
BUILD=${BUILD:-build-gpu}
ARCHIVE=${ARCHIVE:-build-gpu.tar.xz}
LOGS=${LOGS:-$PWD/out/gpu}
OUT=${OUT:-$LOGS/back}
ROUNDS=${ROUNDS:-2}
MATRIX_ROUNDS=${MATRIX_ROUNDS:-3}
DRY=${ASYNCMLP_KIT_DRY:-0}
declare -A BUDGET=([quick]=${KIT_BUDGET:-300} [matrix]=${KIT_BUDGET:-300} [deep]=${KIT_BUDGET:-300})

# Each command's steps: name, expected seconds on an H100, timeout (bound),
# whether it needs the GPU, and what it does. The bounds add up to more than
# the budget on purpose: a step gets min(bound, what is left).
# The expected times are an H100's and H200's from earlier leases, scaled
# where a step now does less: perf's 11 modes and three PyTorch peers a round
# (95 and 105 s) are 5 modes and two peers (60, 65); bench_op_cost at half
# the minimum time (20 s of 40); the floor without repeats of the copies (30).
QUICK=(unpack tests perf64 perf1024 floor trace)
MATRIX=(mcheck opcost matrix mtable mpi goals)
DEEP=(sanitize others chapter normals policies hostwork sweep)
declare -A EXPECT=([unpack]=15 [tests]=90 [perf64]=60 [perf1024]=65 [floor]=30 [opcost]=20 [trace]=15 [goals]=3
  [mcheck]=50 [matrix]=180 [mtable]=3
  [sanitize]=110 [others]=60 [mpi]=12 [chapter]=20 [normals]=15 [policies]=25 [hostwork]=25 [sweep]=30)
declare -A BOUND=([unpack]=90 [tests]=150 [perf64]=110 [perf1024]=120 [floor]=60 [opcost]=45 [trace]=40 [goals]=20
  [mcheck]=90 [matrix]=240 [mtable]=20
  [sanitize]=160 [others]=120 [mpi]=60 [chapter]=60 [normals]=45 [policies]=60 [hostwork]=60 [sweep]=75)
declare -A WHAT=(
  [unpack]="unpack $ARCHIVE; the commit it was built from; nvidia-smi, nvcc, cuBLAS/cuRAND, PyTorch, NCCL, mpirun"
  [tests]="the CUDA-touching test executables ($BUILD/cuda_tests.txt, listed by pack.sh), one after another"
  [perf64]="$ROUNDS rounds at batch 64 (300 batches): train_mlp batch, none, graph batch/none, graph none TF32 | torch_mlp.py whole-step graph, FP32 and TF32"
  [perf1024]="the same at batch 1024 (100 batches)"
  [floor]="bench_cuda_gemm: the eight GEMMs of one step (cuBLAS alone) at 64 and 1024, FP32 and TF32; the forward's two GEMMs with beta 0 and 1; the SGD update of the step's parameters, the bias+ReLU pass and the ReLU's backward at 1024, each beside a device copy of as many bytes"
  [opcost]="bench_op_cost on cuda0: push, worker per op, round trip, BM_RawLaunch (the bare-loop floor), a recorded step against BM_RawCapture"
  [trace]="train_mlp --sync none (and --graph on) at 1024 with --trace, summarised by tools/trace_summary.py"
  [mpi]="mpirun -np 1 train_mlp --distributed mpi --device cuda (bundled OpenMPI, NCCL over MPI) vs one process"
  [goals]="the goals table: both peers, the floor, none/batch, replay share, memory measured/predicted, the step's time outside the GEMMs and idle"
  [mcheck]="test_cuda's GEMM, ReLU, one-unit-layer and training cases with each candidate on"
  [matrix]="$MATRIX_ROUNDS alternated rounds at batch 64 (300 batches) and 1024 (100), FP32 and TF32: train_mlp --graph on --sync none, the default and each candidate"
  [mtable]="each candidate's samples/s over the default's per round: median, spread, and whether it won every round"
  [chapter]="examples/chapter.py --device cuda through the carried Python module (where this machine's python3 is the one it was built for)"
  [sanitize]="compute-sanitizer on the kernels changed since the last GPU run (the SANITIZE list)"
  [others]="every test executable quick did not pass or reach, 8 at a time"
  [normals]="bench_cuda_random: the device normals beside curandGenerateNormal"
  [policies]="train_mlp --config configs/d2l.ini --device cuda --compare-policies"
  [hostwork]="train_mlp --config configs/d2l.ini --device cuda --compare --host-work match"
  [sweep]="train_mlp --config configs/d2l.ini --device cuda --sweep (the whole trade over h/d), plotted to sweep.png")

# compute-sanitizer runs for `deep`: "tool executable filter bound". Kept to
# the kernels changed since the last GPU run, each with a filter that keeps it
# within its bound (memcheck serialises every launch: a whole training suite
# takes minutes).
# The candidates' kernels first (run with every candidate on: SANITIZE_ENV).
SANITIZE_ENV=${SANITIZE_ENV:-ASYNCMLP_CANDIDATES=all}
SANITIZE=(
  "memcheck test_cuda Ops/CudaVsCpu.*/*out_layer*:Ops/CudaVsCpu.*/mul* 40"  # the GEMV rows, the outer-product masking pass, mul
  "racecheck test_cuda Ops/CudaVsCpu.*/*out_layer_grad* 30"  # the outer-product pass's shared sums and tickets
  "memcheck test_cuda Ops/CudaVsCpu.*/*relu*:Ops/CudaVsCpu.*/linear*:CudaTraining.TheMaskPass* 60"  # the float4 bias+ReLU and ReLU-backward passes
  "racecheck test_cuda Ops/CudaVsCpu.*/*row_chunks*:Ops/CudaVsCpu.*/*unbiased_relu* 40"  # their shared-memory sums and tickets
  "synccheck test_cuda Ops/CudaVsCpu.*/*row_chunks* 30"
  "memcheck test_cuda CudaGraph.HeldStepsTrainLikeEagerLaunches 90"  # step graphs with the new passes
)

usage() {
  echo "usage: $0 --plan | quick | matrix | deep | table QUICK_DIR [MATRIX_DIR]" >&2
  exit 2
}

plan() {
  local c s total expect
  if [ -f "$ARCHIVE" ]; then
    printf 'carried: %s, %.1f MiB (limit 64 MiB)\n' "$ARCHIVE" "$(echo "$(stat -c %s "$ARCHIVE") / 1048576" | bc -l)"
  else
    echo "carried: $ARCHIVE not packed yet (bench/gpu/pack.sh $BUILD)"
  fi
  for c in quick matrix deep; do
    local -n steps=${c^^}
    total=0 expect=0
    for s in "${steps[@]}"; do expect=$((expect + EXPECT[$s])); done
    echo
    printf 'bench/gpu/run_gpu_checks.sh %s: <= %d s, about %d s expected; brings back $OUT/%s.tar.xz\n' \
      "$c" "${BUDGET[$c]}" "$expect" "$c"
    for s in "${steps[@]}"; do
      printf '  %-9s about %3d s, timeout %3d s (or what is left)  %s\n' "$s" "${EXPECT[$s]}" "${BOUND[$s]}" "${WHAT[$s]}"
    done
  done
  echo
  echo "the lease: 15 min of device time, the machine's start included: quick, then matrix on the warm machine"
  echo "(run tool: carry=[\"$ARCHIVE\"], timeout_s 330 each), then give the machine back; deep in another lease"
}

# --- running steps ---------------------------------------------------------------------------

say() { echo "== $*"; }
record() {  # PASS|FAIL|NOTE name detail (a dry run passes nothing: it ran no GPU command)
  if [ "$DRY" = 1 ] && [ "$1" = PASS ]; then set -- NOTE "$2" "dry run: GPU commands printed, not run"; fi
  echo "$1 $2 ${3:-}" | tee -a "$results"
  [ "$1" = FAIL ] && status=1
  return 0
}
pack() { tar -C "$LOGS" -cJf "$OUT/$cmd.tar.xz" "$cmd" 2>/dev/null || echo "could not pack $dir" >&2; }
# cap B: a timeout of at most B seconds, never past the step's end.
cap() {
  local left=$((step_end - SECONDS))
  ((left < 1)) && left=1
  echo $(($1 < left ? $1 : left))
}
# x SECONDS COMMAND...: runs it under timeout; in a dry run prints it instead.
x() {
  local t=$1
  shift
  if [ "$DRY" = 1 ]; then
    echo "   dry: ${ASYNCMLP_SEGMENTS:+ASYNCMLP_SEGMENTS=$ASYNCMLP_SEGMENTS }${ASYNCMLP_LT:+ASYNCMLP_LT=$ASYNCMLP_LT }${ASYNCMLP_CANDIDATES:+ASYNCMLP_CANDIDATES=$ASYNCMLP_CANDIDATES }timeout $t $*" >>"$dir/dry.txt"
    return 0
  fi
  timeout -k 5 "$t" "$@"
}
run_steps() {  # the command's steps in order, each under what is left of the budget
  local s left t0
  for s in "$@"; do
    left=$((BUDGET[$cmd] - 10 - (SECONDS - start)))  # 10 s kept for the last pack
    if ((left < EXPECT[$s])); then
      record FAIL "$s" "not started: ${left} s left of ${BUDGET[$cmd]}, it takes about ${EXPECT[$s]} s"
      continue
    fi
    step_end=$((SECONDS + (left < BOUND[$s] ? left : BOUND[$s])))
    t0=$SECONDS
    say "$s (timeout $((step_end - SECONDS)) s): ${WHAT[$s]}"
    [ "$DRY" = 1 ] && echo "-- $s: timeout $((step_end - SECONDS)) s" >>"$dir/dry.txt"
    "step_$s"
    # A dry run takes each step's expected time on the clock, so it walks the
    # budget as a real run would: the steps that would not fit are not started.
    [ "$DRY" = 1 ] && SECONDS=$((SECONDS + EXPECT[$s]))
    echo "   $s took $((SECONDS - t0)) s" | tee -a "$dir/steps.txt"
    pack
  done
}

# NCCL from PyTorch's environment (the nvidia-nccl package); the bundled
# OpenMPI (bundle_mpi.sh) relocated with OPAL_PREFIX.
setup_env() {
  local nccl
  nccl=$(cat "$LOGS/nccl_dir" 2>/dev/null || true)
  [ -n "$nccl" ] || [ "$DRY" = 1 ] ||
    nccl=$(timeout 60 python3 -c 'import nvidia.nccl as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null)
  [ -n "$nccl" ] && echo "$nccl" >"$LOGS/nccl_dir"
  export LD_LIBRARY_PATH=$PWD/$BUILD/rt:/usr/local/cuda/lib64${nccl:+:$nccl}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export ASYNCMLP_BLOCKING=0 ASYNCMLP_SOURCE_DIR=$PWD ASYNCMLP_BIN_DIR=$PWD/$BUILD/bin
  if [ -x "$BUILD/mpi/bin/mpirun" ]; then
    export OPAL_PREFIX=$PWD/$BUILD/mpi PATH=$PWD/$BUILD/mpi/bin:$PATH
    export PMIX_MCA_mca_base_component_path=$PWD/$BUILD/mpi/pmix OMPI_MCA_mca_base_component_show_load_errors=0
  fi
  # One node: shared memory between ranks, no fabric libraries probed.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader
  export PMIX_MCA_pcompress_base_silence_warning=1
}

train() {  # TAG ARGS...: one train_mlp run into $dir/TAG.{json,log}
  local tag=$1
  shift
  CUDA_MODULE_LOADING=EAGER ASYNCMLP_SEGMENTS=${ASYNCMLP_SEGMENTS:-1} x "$(cap 40)" "$BUILD/bin/train_mlp" --device cuda --quiet "$@" \
    --summary-json "$dir/$tag.json" >"$dir/$tag.log" 2>&1
}

# --- quick -----------------------------------------------------------------------------------

step_unpack() {
  # Only the build: the kit's own scripts and configs are this tree's (the
  # archive's copies would overwrite the script running now).
  if [ -f "$ARCHIVE" ] && timeout "$(cap 60)" tar -xJf "$ARCHIVE" "$BUILD"; then
    record PASS unpack "$(ls "$BUILD/bin" | wc -l) executables, $(ls "$BUILD/rt" | wc -l) libraries"
  elif [ -d "$BUILD/bin" ]; then
    record NOTE unpack "no $ARCHIVE: using the $BUILD already here"
  else
    record FAIL unpack "no $ARCHIVE and no $BUILD/bin (bench/gpu/pack.sh makes it)"
    return
  fi
  record NOTE commit "built from $(cat "$BUILD/COMMIT" 2>/dev/null || echo 'an unknown commit (no COMMIT in the archive)')"
  setup_env
  {
    x "$(cap 20)" nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv
    x 20 nvcc --version | tail -2
    ls /usr/local/cuda/lib64 2>/dev/null | grep -E '^lib(cublas|curand)\.so\.[0-9]+$' | sort | tr '\n' ' '
    echo
    x 60 python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
"nccl", ".".join(map(str, torch.cuda.nccl.version())))' 2>&1
    echo "NCCL library: $(cat "$LOGS/nccl_dir" 2>/dev/null || echo 'not found')"
    echo "mpirun: $(command -v mpirun || echo none) $(x 20 mpirun --version 2>&1 | head -1)"
    echo "cores: $(nproc)"
  } 2>&1 | tee "$dir/machine.txt"
}

test_verdict() {  # NAME RC LOG: PASS unless it failed or skipped every CUDA test for want of a GPU
  local name=$1 rc=$2 log=$3 summary skipped
  summary=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "$log" 2>/dev/null | tr -s ' \n' ' ')
  skipped=$(grep -E '^\[  SKIPPED \] [A-Za-z]' "$log" 2>/dev/null | awk '{print $4}' | sort -u | tr '\n' ' ')
  if [ "$DRY" = 1 ]; then
    record NOTE "$name" "dry run: not run"
  elif [ "$rc" -ne 0 ]; then
    record FAIL "$name" "rc=$rc $summary"
  elif grep -qE 'no CUDA GPU visible|(has|built) without the CUDA backend|has no CUDA backend' "$log"; then
    record FAIL "$name" "$summary: CUDA tests skipped for want of a GPU on a GPU machine"
  else
    record PASS "$name" "$summary${skipped:+(skipped, not failures: $skipped)}"
  fi
}

step_tests() {
  local t name rc
  [ -f "$BUILD/cuda_tests.txt" ] || { record FAIL tests "no $BUILD/cuda_tests.txt (pack.sh writes it)"; return; }
  for name in ${TESTS_ONLY:-$(cat "$BUILD/cuda_tests.txt")}; do
    t=$BUILD/bin/$name
    [ -x "$t" ] || { record FAIL "$name" "not in the archive"; continue; }
    if (($(cap 1000) < 15)); then
      record FAIL "$name" "not run: the step's time was spent"
      continue
    fi
    x "$(cap 90)" "$t" --gtest_output="json:$dir/$name.json" >"$dir/$name.log" 2>&1
    rc=$?
    test_verdict "$name" "$rc" "$dir/$name.log"
  done
}

# The modes timed at each batch size: tag and train_mlp's options.
# none_malloc: `none` with one cudaMalloc per block (ASYNCMLP_SEGMENTS=0), the
# pool's segments' effect measured beside them; *_lt: cuBLASLt's fused
# epilogues on (ASYNCMLP_LT=1: one GEMM each, the bias, ReLU and their
# gradients in its epilogue), the fusion measured beside the default.
# graph_none_tf32: the best mode with TF32 GEMMs, beside PyTorch's graph with TF32.
# MODES_ONLY (tags, space-separated) runs only those.
MODES=("batch:--sync batch" "none:--sync none" "graph_batch:--sync batch --graph on"
  "graph_none:--sync none --graph on" "graph_none_tf32:--sync none --graph on --tf32")

perf() {  # BATCH STEPS
  local batch=$1 steps=$2 r m tag opts
  mkdir -p "$dir/perf$batch"
  # A warm-up run first, not counted: the first timed mode would otherwise
  # pay the GPU's and the libraries' first use (a slow first `batch`).
  train "perf$batch/warmup" --sync batch --batches 50 --batch-size "$batch" ||
    record FAIL "train_mlp warm-up, batch $batch" "see perf$batch/warmup.log"
  for r in $(seq 1 "$ROUNDS"); do
    if ((r > 1 && $(cap 1000) < 40)); then
      record FAIL "perf$batch round $r" "not started: under 40 s left of the step"
      break
    fi
    for m in "${MODES[@]}"; do
      tag=${m%%:*} opts=${m#*:}
      [ -z "${MODES_ONLY:-}" ] || [[ " $MODES_ONLY " == *" $tag "* ]] || continue
      # shellcheck disable=SC2086
      ASYNCMLP_SEGMENTS=$([ "$tag" = none_malloc ] && echo 0 || echo 1) \
        ASYNCMLP_LT=$([[ $tag == *_lt ]] && echo 1 || echo 0) \
        train "perf$batch/train_${tag}_$r" $opts --batches "$steps" --batch-size "$batch" ||
        record FAIL "train_mlp $opts, batch $batch #$r" "see perf$batch/train_${tag}_$r.log"
    done
    x "$(cap 60)" python3 bench/gpu/torch_mlp.py --sync batch,none --capture "${TORCH_CAPTURE:-graph}" --batches "$steps" \
      --batch-size "$batch" --repeats 2 --json "$dir/perf$batch/torch_$r.json" >"$dir/perf$batch/torch_$r.log" 2>&1 ||
      record FAIL "torch_mlp.py batch $batch #$r" "see perf$batch/torch_$r.log"
    x "$(cap 40)" python3 bench/gpu/torch_mlp.py --tf32 --sync batch,none --capture graph --batches "$steps" \
      --batch-size "$batch" --repeats 2 --json "$dir/perf$batch/torch_tf32_$r.json" >"$dir/perf$batch/torch_tf32_$r.log" 2>&1 ||
      record FAIL "torch_mlp.py --tf32 batch $batch #$r" "see perf$batch/torch_tf32_$r.log"
  done
  grep -q "FAIL.*batch $batch" "$results" || record PASS "perf$batch" "$ROUNDS rounds x ${#MODES[@]} modes + PyTorch's graph, FP32 and TF32"
}
step_perf64() { perf 64 300; }
step_perf1024() { perf 1024 100; }

step_floor() {
  if x "$(cap 80)" "$BUILD/bin/bench_cuda_gemm" \
    --benchmark_filter='Floor/tf32:[01]/batch:(64|1024)/|CudaMlpGemm/gemm:[01]/|SgdUpdate|Relu|DeviceCopy' \
    --benchmark_min_time=0.04 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
    --benchmark_out="$dir/gemm_floor.json" --benchmark_out_format=json >"$dir/gemm_floor.log" 2>&1; then
    record PASS floor "$dir/gemm_floor.json"
  else
    record FAIL floor "see gemm_floor.log"
  fi
}

step_opcost() {
  if x "$(cap 45)" "$BUILD/bin/bench_op_cost" --benchmark_filter='cuda0' --benchmark_min_time=0.1 \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
    --benchmark_out="$dir/op_cost.json" --benchmark_out_format=json >"$dir/op_cost.log" 2>&1; then
    record PASS opcost "$(grep -E '_median' "$dir/op_cost.log" | awk '{print $1, $2, $3}' | tr '\n' ';')"
  else
    record FAIL opcost "see op_cost.log"
  fi
}

step_trace() {
  local g
  for g in off on; do
    if train "trace_$g" --sync none --graph "$g" --batch-size 1024 --batches 50 --trace "$dir/trace_$g.trace.json" &&
      x "$(cap 30)" python3 tools/trace_summary.py "$dir/trace_$g.trace.json" >"$dir/trace_$g.txt" 2>&1; then
      record PASS "trace --graph $g" "$(grep -iE 'busy|device' "$dir/trace_$g.txt" | head -3 | tr -s ' \n' ' ')"
      # The device track's spans by name: with --graph on, each op of a replayed step has its own.
      x "$(cap 20)" python3 - "$dir/trace_$g.trace.json" >"$dir/trace_${g}_spans.txt" 2>&1 <<'PY'
import collections, json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
tracks = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
dev = {t for t, n in tracks.items() if n.startswith("device")}
c = collections.Counter(e["name"] for e in ev if e.get("ph") == "X" and e.get("tid") in dev)
print("device track spans:", ", ".join(f"{n} {k}" for n, k in c.most_common(12)))
PY
      record NOTE "trace --graph $g spans" "$(head -c 400 "$dir/trace_${g}_spans.txt")"
    else
      record FAIL "trace --graph $g" "see trace_$g.log / trace_$g.txt"
    fi
  done
}

step_mpi() {
  local one two
  command -v mpirun >/dev/null || [ "$DRY" = 1 ] || { record FAIL mpi "no mpirun (the archive's $BUILD/mpi is missing)"; return; }
  train mpi_single --sync batch --batches 20 --batch-size 1024 || record FAIL mpi "the one-process run failed: see mpi_single.log"
  x "$(cap 60)" mpirun --oversubscribe -np 1 "$BUILD/bin/train_mlp" --distributed mpi --device cuda --quiet --sync batch \
    --batches 20 --batch-size 1024 --summary-json "$dir/mpi1.json" >"$dir/mpi1.log" 2>&1 ||
    { record FAIL mpi "mpirun -np 1 train_mlp --distributed mpi failed: see mpi1.log"; return; }
  [ "$DRY" = 1 ] && { record NOTE mpi "dry run: not run"; return; }
  one=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d=d[0] if isinstance(d,list) else d; print(d["final_loss"])' "$dir/mpi_single.json" 2>/dev/null)
  two=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d=d[0] if isinstance(d,list) else d; print(d["final_loss"])' "$dir/mpi1.json" 2>/dev/null)
  if [ -n "$one" ] && [ "$one" = "$two" ]; then
    record PASS mpi "mpirun -np 1 --distributed mpi: final loss $two, the one-process run's $one"
  else
    record FAIL mpi "final loss ${two:-?} under mpirun, ${one:-?} in one process"
  fi
}

step_goals() {
  if [ "$DRY" = 1 ]; then
    x "$(cap 20)" python3 bench/gpu/table.py "$LOGS/quick" "$dir"
    record NOTE goals "dry run: not run"
    return
  fi
  x "$(cap 20)" python3 bench/gpu/table.py "$LOGS/quick" "$dir" | tee "$dir/goals.txt" || record FAIL goals "table.py failed"
}

# --- matrix ----------------------------------------------------------------------------------

# The candidates: tag and the environment that turns it on (each off by
# default; docs/gpu.md, "Candidates"). The default is timed beside them in
# every round.
CANDIDATES=("lt:ASYNCMLP_LT=1" "out_gemv:ASYNCMLP_CANDIDATES=out_gemv" "out_grad:ASYNCMLP_CANDIDATES=out_grad"
  "worker_spin:ASYNCMLP_CANDIDATES=worker_spin")
# test_cuda's cases each candidate changes, run with it on.
CANDIDATE_TESTS='Ops/CudaVsCpu.*linear*:Ops/CudaVsCpu.*relu*:Ops/CudaVsCpu.*out_layer*:CudaTraining.*'

step_mcheck() {
  local c tag envs
  for c in "${CANDIDATES[@]}"; do
    tag=${c%%:*} envs=${c#*:}
    # shellcheck disable=SC2086
    x "$(cap 40)" env $envs "$BUILD/bin/test_cuda" --gtest_filter="$CANDIDATE_TESTS" >"$dir/test_cuda_$tag.log" 2>&1
    test_verdict "test_cuda's cases with $envs" $? "$dir/test_cuda_$tag.log"
  done
}

train_with() {  # VAR=VALUE (or nothing) TAG ARGS...: train, that variable set for the run
  [ -n "$1" ] && local -x "$1"
  shift
  train "$@"
}

step_matrix() {
  local r batch steps prec c tag envs
  mkdir -p "$dir/matrix"
  for r in $(seq 1 "$MATRIX_ROUNDS"); do
    if ((r > 1 && $(cap 1000) < 60)); then
      record NOTE matrix "stopped after $((r - 1)) rounds: the step's time was spent"
      break
    fi
    for batch in 64 1024; do
      steps=$([ "$batch" = 64 ] && echo 300 || echo 100)
      for prec in fp32 tf32; do
        for c in "default:" "${CANDIDATES[@]}"; do
          tag=${c%%:*}
          # shellcheck disable=SC2046
          train_with "${c#*:}" "matrix/${tag}_${batch}_${prec}_$r" --sync none --graph on \
            $([ "$prec" = tf32 ] && echo --tf32) --batches "$steps" --batch-size "$batch" ||
            record FAIL "matrix $tag, batch $batch $prec #$r" "see matrix/${tag}_${batch}_${prec}_$r.log"
        done
      done
    done
  done
  grep -q "FAIL matrix" "$results" || record PASS matrix "$MATRIX_ROUNDS rounds x ${#CANDIDATES[@]} candidates + the default"
}

step_mtable() {
  x "$(cap 20)" python3 bench/gpu/matrix_table.py "$dir/matrix" | tee "$dir/matrix.txt" ||
    record FAIL mtable "matrix_table.py failed"
  [ "$DRY" = 1 ] && record NOTE mtable "dry run: not run"
}

# --- deep ------------------------------------------------------------------------------------

step_sanitize() {
  local e tool t filter bound log rc line tests
  for e in "${SANITIZE[@]}"; do
    read -r tool t filter bound <<<"$e"
    log=$dir/$tool.$t.log
    # shellcheck disable=SC2086
    x "$(cap "$bound")" env $SANITIZE_ENV compute-sanitizer --tool "$tool" --error-exitcode 99 "$BUILD/bin/$t" --gtest_filter="$filter" \
      >"$log" 2>&1
    rc=$?
    [ "$DRY" = 1 ] && { record NOTE "$tool $t" "dry run: not run"; continue; }
    line=$(grep -E '(ERROR|RACECHECK|SYNCCHECK) SUMMARY' "$log" | tail -1)
    tests=$(grep -E '^\[  PASSED  \] [0-9]+ test' "$log" | tr -s ' ')
    if [ $rc -eq 0 ]; then record PASS "$tool $t" "$tests $line"; else record FAIL "$tool $t" "rc=$rc $line"; fi
  done
}

step_others() {
  local t name list=()
  for t in "$BUILD"/bin/test_*; do  # every one quick did not pass (or did not reach)
    name=$(basename "$t")
    grep -q "^PASS $name " "$LOGS/quick/results.txt" 2>/dev/null || list+=("$name")
  done
  local each
  each=$(cap 110)
  printf '%s\n' "${list[@]}" | DIR=$dir BUILD=$BUILD DRY=$DRY EACH=$each xargs -P 8 -I{} bash -c \
    'if [ "$DRY" = 1 ]; then echo "   dry: timeout $EACH $BUILD/bin/{}" >>"$DIR/dry.txt"; exit 0; fi
     timeout -k 5 "$EACH" "$BUILD/bin/{}" --gtest_output="json:$DIR/{}.json" >"$DIR/{}.log" 2>&1; echo $? >"$DIR/{}.rc"'
  for name in "${list[@]}"; do
    test_verdict "$name" "$(cat "$dir/$name.rc" 2>/dev/null || echo 124)" "$dir/$name.log"
  done
}

step_chapter() {
  local py
  py=$(ls "$BUILD"/python/asyncmlp/_asyncmlp.cpython-*.so 2>/dev/null | head -1)
  [ -n "$py" ] || [ "$DRY" = 1 ] || { record NOTE chapter "no Python module in the archive (built without pybind11)"; return; }
  if [ "$DRY" != 1 ] && ! PYTHONPATH=$BUILD/python timeout 30 python3 -c 'import asyncmlp' >"$dir/chapter_import.log" 2>&1; then
    record NOTE chapter "python3 here cannot load $(basename "$py"): $(tail -1 "$dir/chapter_import.log")"
    return
  fi
  if PYTHONPATH=$BUILD/python x "$(cap 60)" python3 examples/chapter.py --device cuda --json \
    >"$dir/chapter_cuda.json" 2>"$dir/chapter_cuda.txt"; then
    [ "$DRY" = 1 ] && return
    record PASS chapter "$(grep -E 'none / batch' "$dir/chapter_cuda.txt" | tr -s ' ')"
    python3 examples/chapter.py --markdown <"$dir/chapter_cuda.json" >"$dir/chapter_cuda.md" 2>&1 || true
  else
    record FAIL chapter "see chapter_cuda.txt"
  fi
}

step_normals() {
  if x "$(cap 45)" "$BUILD/bin/bench_cuda_random" --benchmark_min_time=0.1 --benchmark_out="$dir/normals.json" \
    --benchmark_out_format=json >"$dir/normals.log" 2>&1; then
    [ "$DRY" = 1 ] && return
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
}

compare_run() {  # TAG ARGS...
  local tag=$1
  shift
  if x "$(cap 60)" "$BUILD/bin/train_mlp" --config configs/d2l.ini --device cuda --quiet "$@" \
    --summary-json "$dir/$tag.json" >"$dir/$tag.log" 2>&1; then
    record PASS "train_mlp $*" "$(grep -E 'samples/s|x batch' "$dir/$tag.log" | head -8 | tr -s ' \n' ' ')"
  else
    record FAIL "train_mlp $*" "see $tag.log"
  fi
}
step_policies() { compare_run policies --compare-policies; }
step_hostwork() { compare_run hostwork --compare --host-work match; }
step_sweep() {
  if x "$(cap 75)" "$BUILD/bin/train_mlp" --config configs/d2l.ini --device cuda --sweep \
    --summary-json "$dir/sweep.json" >"$dir/sweep.log" 2>&1; then
    record PASS "train_mlp --sweep" "$(grep -E '^off by|^  ' "$dir/sweep.log" | tail -4 | tr -s ' \n' ' ')"
    if [ "$DRY" != 1 ]; then  # the plot, where matplotlib is installed (the table is in sweep.log either way)
      python3 tools/plot_sweep.py "$dir/sweep.json" -o "$dir/sweep.png" >>"$dir/sweep.log" 2>&1 ||
        record NOTE "plot_sweep" "no plot (see sweep.log)"
    fi
  else
    record FAIL "train_mlp --sweep" "see sweep.log"
  fi
}

# --- main ------------------------------------------------------------------------------------

[ $# -ge 1 ] || usage
case $1 in
  --plan) plan; exit 0 ;;
  table) [ $# -ge 2 ] && [ $# -le 3 ] || usage; shift; exec python3 bench/gpu/table.py "$@" ;;
  quick | matrix | deep) cmd=$1 ;;
  *) usage ;;
esac
shift
only=" $* "  # steps asked for by name; none: all of them
for s in "$@"; do [[ " ${QUICK[*]} ${MATRIX[*]} ${DEEP[*]} " == *" $s "* ]] || usage; done
pick() {  # the command's steps, less those not asked for
  local s
  for s in "$@"; do [[ "$only" == "  " || "$only" == *" $s "* ]] && echo "$s"; done
}
dir=$LOGS/$cmd
rm -rf "$dir"
mkdir -p "$dir" "$OUT"
results=$dir/results.txt
: >"$results"
status=0
start=$SECONDS
[ "$DRY" = 1 ] && say "dry run: GPU commands are printed to $dir/dry.txt with their timeouts, not run"
if [ "$cmd" = quick ]; then
  # shellcheck disable=SC2046
  run_steps $(pick "${QUICK[@]}")
else
  [ -d "$BUILD/bin" ] || [ "$DRY" = 1 ] || { echo "no $BUILD/bin: run quick first (it unpacks $ARCHIVE)" >&2; exit 2; }
  setup_env
  if [ "$cmd" = matrix ]; then
    # shellcheck disable=SC2046
    run_steps $(pick "${MATRIX[@]}")
  else
    # shellcheck disable=SC2046
    run_steps $(pick "${DEEP[@]}")
  fi
fi
say "$cmd: $((SECONDS - start)) s of ${BUDGET[$cmd]}"
[ "$DRY" = 1 ] && cat "$dir/dry.txt"
say "results ($cmd)"
cat "$results"
[ "$cmd" = matrix ] && [ -f "$dir/goals.txt" ] && { say "goals"; cat "$dir/goals.txt"; }
pack
exit $status
