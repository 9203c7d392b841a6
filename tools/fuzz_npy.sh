#!/usr/bin/env bash
# fuzz_npy.sh — the .npy reader's fuzzing (tools/fuzz.sh npy):
#
#   bash tools/fuzz_npy.sh [SECONDS] [--update-corpus]
exec bash "$(dirname "$0")/fuzz.sh" npy "$@"
