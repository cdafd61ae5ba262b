#!/usr/bin/env bash
# bench/startup/processes.sh: a command's whole-process wall time, exec to
# exit, over separate processes (for machines without farm-bench, such as
# the lent GPU). Prints each run's milliseconds, then min, median and max.
#
# usage: bench/startup/processes.sh [-n RUNS] [-w WARMUP] -- COMMAND [ARG...]
#   -n RUNS    timed processes (default 10)
#   -w WARMUP  untimed processes first (default 1: caches warm)
# The command's output is discarded; a failing run is an error (exit 1).
set -eu
runs=10 warm=1
while getopts 'n:w:' opt; do
	case $opt in
	n) runs=$OPTARG ;;
	w) warm=$OPTARG ;;
	*) sed -n '5,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ "${1:-}" = -- ] && shift
[ $# -gt 0 ] || { sed -n '5,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
for _ in $(seq "$warm"); do "$@" >/dev/null 2>&1 || { echo "processes.sh: warm-up run failed: $*" >&2; exit 1; }; done
times=()
for i in $(seq "$runs"); do
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1 || { echo "processes.sh: run $i failed: $*" >&2; exit 1; }
	t1=$(date +%s%N)
	times+=("$(( (t1 - t0) / 1000 ))")
done
printf '%s\n' "${times[@]}" | sort -n | awk -v cmd="$*" '
	{ v[NR] = $1 / 1000; printf "%2d. %8.2f ms (sorted)\n", NR, v[NR] }
	END {
		med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%s: %d processes, min %.2f ms, median %.2f ms, max %.2f ms\n", cmd, NR, v[1], med, v[NR]
	}'
