#!/usr/bin/env bash
# One Google Benchmark case timed in two builds, alternated in one run, so a
# shared machine's load falls on both alike; prints each run and the medians.
#
#   bash tools/ab_bench.sh OLD_BIN NEW_BIN FILTER [ROUNDS=5] [COUNTER=per_op]
#   bash tools/ab_bench.sh old/build/bin/bench_op_cost build/bin/bench_op_cost 'BM_OpWorker/cpu0/256/'
set -euo pipefail
old=$1 new=$2 filter=$3 rounds=${4:-5} counter=${5:-per_op}
one() {  # the counter's value in ns from one run of the case
  "$1" --benchmark_filter="$filter" --benchmark_min_time=0.3 2>/dev/null |
    sed -n "s/.*$counter=\([0-9.]*\)\([mun]*\)s.*/\1 \2/p" | head -1 |
    awk '{v=$1; if ($2=="u") v*=1e3; else if ($2=="m") v*=1e6; printf "%.1f\n", v}'
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
a=() b=()
for ((i = 1; i <= rounds; ++i)); do
  a+=("$(one "$old")"); b+=("$(one "$new")")
  echo "round $i: old ${a[-1]} ns, new ${b[-1]} ns"
done
ma=$(printf '%s\n' "${a[@]}" | median) mb=$(printf '%s\n' "${b[@]}" | median)
echo "median: old $ma ns, new $mb ns per op; old/new = $(awk -v x="$ma" -v y="$mb" 'BEGIN {printf "%.2f", x/y}')"
