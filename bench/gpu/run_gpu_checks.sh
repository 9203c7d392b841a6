#!/usr/bin/env bash
# run_gpu_checks.sh — the GPU kit, bench/gpu/gpu_kit.py, under this name too:
# the same arguments, environment and exit status (docs/gpu.md, "The GPU kit").
exec python3 "$(dirname "$0")/gpu_kit.py" "$@"
