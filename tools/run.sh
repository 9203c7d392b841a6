#!/usr/bin/env bash
# The main job: build, then run the sync-vs-async comparison on the default
# device (a GPU if there is one, else the CPU) and draw its plots: first the
# memory side (the loop does nothing but queue batches), then the throughput
# side (the frontend also does as much work per batch as the device, standing
# for an input pipeline: --host-work match), then the whole trade: --sweep runs
# every mode with the frontend's time per batch at fractions of the device's
# (h/d = 0 .. 1.5), beside both models, and draws both sides over h/d.
#
#   bash tools/run.sh                         # both on configs/quick.ini (CPU) or
#                                             # configs/d2l.ini (when a GPU is visible)
#   bash tools/run.sh --config configs/d2l.ini --compare   # one run of any train_mlp options
# Outputs land in out/: summary.json, memory.<mode>.csv, trace.json, memory.svg;
# host_work.json, host_work.<mode>.csv, host_work.svg; sweep.json, sweep.svg.
#
# It builds train_mlp alone (the tests, benchmarks and examples are the test
# command's) and ends with a table of the seconds each phase took.
source "$(dirname "$0")/setup.sh"
amlp_install_deps
AMLP_TARGETS=train_mlp amlp_build build
cd "$AMLP_ROOT"
mkdir -p out
rm -f out/memory*.csv out/memory.svg out/summary.json out/host_work*.csv out/host_work.svg out/host_work.json \
  out/sweep.json out/sweep.svg
args=("$@")
both=0
if ((${#args[@]} == 0)); then
  both=1
  # The book's shape on a GPU; on 2 CPU cores the same shape shrunk to run in seconds.
  config=configs/quick.ini
  nvidia-smi -L 2>/dev/null | grep -q '^GPU' && config=configs/d2l.ini
  args=(--config "$config" --compare)
fi
amlp_phase "train_mlp ${args[*]}, and its plot" "build/bin/train_mlp ${args[*]}"
build/bin/train_mlp "${args[@]}" --memory-log out/memory.csv --summary-json out/summary.json --trace out/trace.json
"$(amlp_python)" tools/plot_memory.py out/memory*.csv out/summary.json -o out/memory.svg
amlp_log "plot: out/memory.svg   trace: out/trace.json (open in https://ui.perfetto.dev)"
if ((both)); then
  amlp_phase "train_mlp ${args[*]} --host-work match, and its plot" "build/bin/train_mlp ${args[*]} --host-work match"
  build/bin/train_mlp "${args[@]}" --host-work match --memory-log out/host_work.csv --summary-json out/host_work.json
  "$(amlp_python)" tools/plot_memory.py out/host_work.*.csv out/host_work.json -o out/host_work.svg
  amlp_log "plot: out/host_work.svg"
  sweep=(--config "$config" --sweep)
  amlp_phase "train_mlp ${sweep[*]}, and its plot" "build/bin/train_mlp ${sweep[*]}"
  build/bin/train_mlp "${sweep[@]}" --quiet --summary-json out/sweep.json
  "$(amlp_python)" tools/plot_sweep.py out/sweep.json -o out/sweep.svg
  amlp_log "plots: out/memory.svg (memory side), out/host_work.svg (throughput side),"
  amlp_log "       out/sweep.svg (the whole trade: speed-up and memory over h/d, measured over the models)"
fi
amlp_phase_table
