#!/usr/bin/env bash
# bench/startup/e2e.sh: issue 27's process figures in one run.
#   1. glmul -n 128 as whole processes (processes.sh), for each binary given;
#   2. glmul -n 4096's end-to-end time (host matrices in, C out: the report's
#      "pipelined" line), ten separate processes, plain and -mapped, with the
#      first binary;
#   3. PyTorch's end to end from pageable and pinned memory (pytorch_e2e.py,
#      if PYTORCH_E2E names it), for the same-run comparison.
# usage: bench/startup/e2e.sh GLMUL [OTHER_GLMUL...]   (extra glmul flags: GLMUL_FLAGS)
set -u
here=$(cd "$(dirname "$0")" && pwd)
flags=(-backend egl ${GLMUL_FLAGS:-})
for g in "$@"; do
	"$here/processes.sh" -n 10 -- "$g" -n 128 "${flags[@]}" | tail -1
done
for mode in plain -mapped; do
	extra=()
	[ "$mode" = plain ] || extra=("$mode")
	ms=()
	for _ in $(seq 10); do
		ms+=("$("$1" -n 4096 "${flags[@]}" "${extra[@]}" 2>&1 | awk '$1 == "pipelined" { print $2; exit }')")
	done
	printf '%s\n' "${ms[@]}" | sort -n | awk -v what="glmul -n 4096 $mode" '
		{ v[NR] = $1 } END { med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%s: end to end over %d processes: min %.2f ms, median %.2f ms, max %.2f ms\n", what, NR, v[1], med, v[NR] }'
done
if [ -n "${PYTORCH_E2E:-}" ]; then
	python3 "$PYTORCH_E2E"
fi
