#!/usr/bin/env bash
# run_gpu_checks.sh — every check to make on a machine with a GPU, in one go: the
# machine, every test executable, compute-sanitizer (memcheck, racecheck) on
# the CUDA tests, then train_mlp in both sync modes beside the PyTorch eager
# peer (interleaved, in the same minutes), the cuBLAS GEMM floor, and a short
# table last. Correctness first, then timings.
#
# Run from the repository root on the GPU machine, with a prebuilt build-gpu
# (built elsewhere with -DCMAKE_CUDA_ARCHITECTURES=90; the non-CUDA shared
# libraries it needs — OpenBLAS, Boost — copied into build-gpu/rt):
#
#   bench/gpu/run_gpu_checks.sh [all|info|tests|sanitize|memcheck|racecheck|perf]
#
# (default: all; sanitize = memcheck + racecheck). Each phase is bounded by
# timeouts of 500 s per program; run the phases one by one where a command
# has a time limit. Full logs go to $OUT (default: out/gpu); the table is also in
# $OUT/table.txt. Exit status: 0 when every test and sanitizer run passed.
# Environment: BUILD (default build-gpu), OUT, REPEATS (default 5), BATCHES
# (default 100), BATCH_SIZE (default 1024).
set -uo pipefail

phase=${1:-all}
case $phase in all | info | tests | sanitize | memcheck | racecheck | perf) ;; *)
  echo "usage: $0 [all|info|tests|sanitize|memcheck|racecheck|perf]" >&2
  exit 2
  ;;
esac
cd "$(dirname "$0")/../.." || exit 2
BUILD=${BUILD:-build-gpu}
OUT=${OUT:-$PWD/out/gpu}
REPEATS=${REPEATS:-5}
BATCHES=${BATCHES:-100}
BATCH_SIZE=${BATCH_SIZE:-1024}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/$BUILD/rt:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export ASYNCMLP_BLOCKING=0
status=0
results=$OUT/results.txt  # one line per check: PASS|FAIL name detail
[ -d "$BUILD/bin" ] || { echo "no $BUILD/bin: build it first (see the header)" >&2; exit 2; }
[ "$phase" = all ] && : >"$results"

say() { echo "== $*"; }
record() { echo "$1 $2 ${3:-}" | tee -a "$results"; [ "$1" = PASS ] || status=1; }

if [[ $phase == all || $phase == info ]]; then
  say "the machine"
  {
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv
    nvcc --version | tail -2
    # shellcheck disable=SC2010  # the command the device README asks for
    ls /usr/local/cuda/lib64 | grep -E 'cublas|curand' | sort
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
    nproc
  } 2>&1 | tee "$OUT/machine.txt"
fi

if [[ $phase == all || $phase == tests ]]; then
  say "tests"
  for t in "$BUILD"/bin/test_*; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    timeout 500 "$t" --gtest_output="json:$OUT/$name.json" >"$OUT/$name.log" 2>&1
    rc=$?
    summary=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "$OUT/$name.log" | tr -s ' \n' ' ')
    skipped=$(grep -oE '^\[  SKIPPED \] [0-9]+ test' "$OUT/$name.log" | grep -oE '[0-9]+' || true)
    if [ $rc -ne 0 ]; then
      record FAIL "$name" "rc=$rc $summary (see $OUT/$name.log)"
    elif [ "$name" = test_cuda_backend ] && [ "${skipped:-0}" -gt 0 ]; then
      record FAIL "$name" "$summary: CUDA tests skipped on a GPU machine (see $OUT/$name.log)"
    else
      record PASS "$name" "$summary"
    fi
  done
  grep -h '\[   INFO   \]' "$OUT"/test_cuda_backend.log 2>/dev/null | tee "$OUT/cuda_info.txt"
  # Data parallelism through NCCL: a single rank on one GPU (the all-reduce
  # still runs), every GPU when there are several; the losses beside cuda:0
  # alone's, and async_demo's one-vs-several table.
  gpus=$(nvidia-smi -L | grep -c '^GPU')
  list=$(seq -s, -f 'cuda:%g' 0 $((gpus - 1)))
  for devs in cuda:0 "$list"; do
    tag=${devs//[:,]/_}
    if timeout 300 "$BUILD/bin/train_mlp" --devices "$devs" --sync batch --batches 20 --batch-size 1024 \
      --memory-log "$OUT/dp_$tag.csv" --summary-json "$OUT/dp_$tag.json" >"$OUT/dp_$tag.log" 2>&1; then
      record PASS "train_mlp --devices $devs" "$(grep -E 'samples/s|final loss' "$OUT/dp_$tag.log" | tr -s ' \n' ' ')"
    else
      record FAIL "train_mlp --devices $devs" "see $OUT/dp_$tag.log"
    fi
    [ "$devs" = "$list" ] && break
  done
  timeout 300 "$BUILD/bin/async_demo" data-parallel --device cuda >"$OUT/async_demo_dp.log" 2>&1 ||
    record FAIL "async_demo data-parallel" "see $OUT/async_demo_dp.log"
  # The policy table on a GPU: blocks reused once their last op is launched
  # (stream order), predicted from the batches not yet launched.
  if timeout 300 "$BUILD/bin/train_mlp" --config configs/d2l.ini --device cuda --compare-policies \
    --summary-json "$OUT/policies.json" >"$OUT/policies.log" 2>&1; then
    record PASS "train_mlp --compare-policies (cuda)" "$(grep -E '^(enqueue|run) ' "$OUT/policies.log" | tr -s ' \n' ' ')"
  else
    record FAIL "train_mlp --compare-policies (cuda)" "see $OUT/policies.log"
  fi
fi

t=$BUILD/bin/test_cuda_backend
if [[ $phase == all || $phase == sanitize || $phase == memcheck ]]; then
  say "compute-sanitizer memcheck on test_cuda_backend"
  # Left out: the timing test (50 GEMMs of 4096^3 are far too slow under
  # memcheck) and the deliberate failed cudaMalloc of twice the GPU, which the
  # sanitizer reports as an API error by design. No --leak-check: the caching
  # pools keep their blocks until exit by design, and whether the static
  # registry frees them before the CUDA runtime's own teardown depends on
  # initialisation order.
  skip='-CudaQueue.WaitToReadWaitsForTheGpuNotJustTheLaunch:CudaMemory.AnImpossibleRequestIsOutOfMemoryAndTheProcessGoesOn'
  timeout 500 compute-sanitizer --tool memcheck --error-exitcode 99 \
    "$t" --gtest_filter="$skip" >"$OUT/memcheck.log" 2>&1
  rc=$?
  line=$(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)
  if [ $rc -eq 0 ]; then record PASS memcheck "$line"; else record FAIL memcheck "rc=$rc $line (see $OUT/memcheck.log)"; fi
fi

if [[ $phase == all || $phase == sanitize || $phase == racecheck ]]; then
  say "compute-sanitizer racecheck on test_cuda_backend"
  # racecheck: shared-memory hazards, i.e. the reduction kernels; the op
  # differential tests run every kernel of the backend.
  timeout 500 compute-sanitizer --tool racecheck --error-exitcode 99 \
    "$t" --gtest_filter='Ops/*:CudaRandom.*:CudaErrors.*' >"$OUT/racecheck.log" 2>&1
  rc=$?
  line=$(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck.log" | tail -1)
  if [ $rc -eq 0 ]; then record PASS racecheck "$line"; else record FAIL racecheck "rc=$rc $line (see $OUT/racecheck.log)"; fi
fi

if [[ $phase == all || $phase == perf ]]; then
  say "train_mlp and PyTorch eager, interleaved ($REPEATS repeats of $BATCHES batches of $BATCH_SIZE)"
  # train_mlp times its 100 batches from a cold start, as the book does (its
  # deferred-init forward creates the CUDA context and cuBLAS first). Kernels
  # load when first used (lazy module loading, CUDA >= 12): EAGER loads them
  # at start-up instead, so the timed batches time training, as PyTorch's
  # warm-up batches do for the peer. One lazy run per mode is kept for reference.
  train() {  # mode tag [env...]
    local mode=$1 tag=$2
    shift 2
    env "$@" "$BUILD/bin/train_mlp" --device cuda --sync "$mode" --batches "$BATCHES" --batch-size "$BATCH_SIZE" \
      --summary-json "$OUT/train_${mode}_$tag.json" --memory-log "$OUT/train_${mode}_$tag.csv" \
      >"$OUT/train_${mode}_$tag.log" 2>&1 || record FAIL "train_mlp --sync $mode ($tag)" "see $OUT/train_${mode}_$tag.log"
  }
  for mode in batch none; do train "$mode" lazy CUDA_MODULE_LOADING=LAZY; done
  for r in $(seq 1 "$REPEATS"); do
    for mode in batch none; do train "$mode" "$r" CUDA_MODULE_LOADING=EAGER; done
    if [ "$r" = 1 ] || [ "$r" = "$REPEATS" ]; then  # the peer twice: at the start and at the end of the slot
      for mode in batch none; do
        python3 bench/gpu/torch_mlp.py --sync "$mode" --batches "$BATCHES" --batch-size "$BATCH_SIZE" \
          --repeats "$REPEATS" --json "$OUT/torch_${mode}_$r.json" >"$OUT/torch_${mode}_$r.log" 2>&1 ||
          record FAIL "torch_mlp.py --sync $mode #$r" "see $OUT/torch_${mode}_$r.log"
      done
    fi
  done
  say "GEMM floor (cuBLAS alone)"
  "$BUILD/bin/bench_cuda_gemm" --benchmark_format=json --benchmark_out="$OUT/gemm_floor.json" \
    --benchmark_out_format=json --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
    >"$OUT/gemm_floor.log" 2>&1 || record FAIL bench_cuda_gemm "see $OUT/gemm_floor.log"

  say "table"
  python3 - "$OUT" "$REPEATS" <<'EOF' | tee "$OUT/table.txt"
import glob, json, os, statistics, sys
out, repeats = sys.argv[1], int(sys.argv[2])
MiB = 2**20

def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

floor_us = {}
g = load(os.path.join(out, "gemm_floor.json"))
for b in (g or {}).get("benchmarks", []):
    if b.get("aggregate_name") == "median" and b["name"].startswith("BM_CudaMlpGemmFloor/tf32:"):
        floor_us[b["name"].split("tf32:")[1].split("/")[0]] = b["real_time"]  # microseconds
floor = floor_us.get("0")
print(f"GEMM floor (8 cuBLAS GEMMs of one step, FP32): "
      f"{floor:.1f} us/step = {1e6 / floor:.0f} steps/s" if floor else "GEMM floor: not measured")
if "1" in floor_us:
    print(f"  with TF32: {floor_us['1']:.1f} us/step")
print()
hdr = f"{'mode':6} {'ours steps/s':>12} {'step/floor':>10} {'torch steps/s':>13} {'ours/torch':>10} " \
      f"{'ours +MiB':>10} {'predicted':>10} {'torch +MiB':>10} {'final loss':>11}"
print(hdr)
print("-" * len(hdr))
for mode in ("batch", "none"):
    runs = [r for p in sorted(glob.glob(os.path.join(out, f"train_{mode}_[0-9]*.json"))) for r in (load(p) or [])]
    peers = [load(p) for p in sorted(glob.glob(os.path.join(out, f"torch_{mode}_*.json")))]
    peers = [p for p in peers if p]
    if not runs:
        print(f"{mode:6} (no train_mlp result)")
        continue
    sps = statistics.median(r["samples_per_s"] / r["batch_size"] for r in runs)
    inc = statistics.median(r["mem_increase_bytes"] for r in runs) / MiB
    pred = statistics.median(r["predicted_increase_bytes"] for r in runs) / MiB
    loss = runs[-1].get("final_loss")
    ratio_floor = (1e6 / sps) / floor if floor else float("nan")
    tsps = statistics.median(p["steps_per_s"] for p in peers) if peers else float("nan")
    tinc = statistics.median(p["mem_increase_bytes"] for p in peers) / MiB if peers else float("nan")
    loss_s = f"{loss:.6g}" if isinstance(loss, (int, float)) else "-"
    print(f"{mode:6} {sps:12.1f} {ratio_floor:10.2f} {tsps:13.1f} {sps / tsps:10.2f} "
          f"{inc:10.1f} {pred:10.1f} {tinc:10.1f} {loss_s:>11}")
lazy = []
for mode in ("batch", "none"):
    r = load(os.path.join(out, f"train_{mode}_lazy.json"))
    if r:
        lazy.append(f"{mode} {r[0]['samples_per_s'] / r[0]['batch_size']:.1f}")
if lazy:
    print("ours with lazy module loading (one run each), steps/s: " + ", ".join(lazy))
print()
print("steps/s: medians over the repeats; step/floor = time per step / GEMM floor (target <= 1.2);")
print("ours/torch: target >= 1 in both modes; +MiB: peak minus start of tracked bytes (ours) and of")
print("torch.cuda.max_memory_allocated (peer); predicted: train_mlp's backlog x bytes per batch.")
EOF
fi

if [ -s "$results" ]; then
  say "results"
  cat "$results"
fi
exit $status
