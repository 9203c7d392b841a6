#!/usr/bin/env bash
# The main job: build, then run the sync-vs-async comparison on the default
# device (a GPU if there is one, else the CPU) and draw its memory plot.
#
#   bash tools/run.sh                         # --compare on configs/quick.ini (CPU) or
#                                             # configs/d2l.ini (when a GPU is visible)
#   bash tools/run.sh --config configs/d2l.ini --compare   # any train_mlp options
# Outputs land in out/: summary.json, memory.<mode>.csv, trace.json, memory.svg
source "$(dirname "$0")/setup.sh"
amlp_install_deps
amlp_build build
cd "$AMLP_ROOT"
mkdir -p out
rm -f out/memory*.csv out/memory.svg out/summary.json
args=("$@")
if ((${#args[@]} == 0)); then
  # The book's shape on a GPU; on 2 CPU cores the same shape shrunk to run in seconds.
  config=configs/quick.ini
  nvidia-smi -L 2>/dev/null | grep -q '^GPU' && config=configs/d2l.ini
  args=(--config "$config" --compare)
fi
amlp_log "build/bin/train_mlp ${args[*]}"
build/bin/train_mlp "${args[@]}" --memory-log out/memory.csv --summary-json out/summary.json --trace out/trace.json
"$(amlp_python)" tools/plot_memory.py out/memory*.csv out/summary.json -o out/memory.svg
amlp_log "plot: out/memory.svg   trace: out/trace.json (open in https://ui.perfetto.dev)"
