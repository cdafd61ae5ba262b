#!/usr/bin/env bash
# bench/multigpu/run.sh: glmul on one GPU and on a group of GPUs against
# cuBLASXt, host memory to host memory, in one sequence on one machine;
# JSON and logs into OUTDIR, the Markdown report (report.py) on stdout.
#
# usage: bench/multigpu/run.sh [-r REPS] [-x XT_REPS] [-b BLOCK] [-p PIN] [-t SEC] [-X] GLMUL [OUTDIR [SIZE...]]
#
#   GLMUL     the glmul binary (on the GPU machine: .device/glmul)
#   OUTDIR    where everything goes (default: $OUT if set, else bench/multigpu/out)
#   SIZE      N of the N×N·N×N products, run in the order given
#             (default: $SIZES if set, else 16384 32768)
#   -r REPS   glmul -reps: timed runs (default 5); the group path reports
#             their median, the single path its pipelined pass
#   -x N      cuBLASXt's timed calls after one warm-up (default 5)
#   -b BLOCK  cuBLASXt's block dim (default: cuBLASXt's own)
#   -p PIN    cuBLASXt host memory: enabled (default: cuBLASXt pins in each
#             call), registered (pinned once, untimed), disabled; a comma list
#             runs each, e.g. enabled,registered
#   -t SEC    time limit of each command (default 300); one that runs over is
#             killed and reported missing, and the sequence goes on
#   -X        no cuBLASXt
#   GLMUL_FLAGS  extra flags for every glmul product (word-split)
#   PYTHON       the python3 with NumPy (default python3, else /usr/bin/python3)
#
# For each SIZE, in this order: glmul -n N (one GPU, the single-device
# path); glmul -n N -devices 1 (the group path on one GPU); with G > 2 GPUs
# -devices 1,2 ... 1,..,G-1; glmul -n N -devices all; cuBLASXt on GPU 0 and
# on all GPUs (one process: the same inputs). Exit status: 0 all ran and
# validated, 1 a command failed or a check did not pass (targets missed are
# FAILs in the report, not an exit status), 2 usage error or a missing tool.
set -u
export LC_ALL=C

usage() {
	sed -n '5,30p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

reps=5 xreps=5 block='' pins=enabled tmo=300 xt=1
while getopts 'r:x:b:p:t:Xh' opt; do
	case $opt in
	r) reps=$OPTARG ;;
	x) xreps=$OPTARG ;;
	b) block=$OPTARG ;;
	p) pins=$OPTARG ;;
	t) tmo=$OPTARG ;;
	X) xt=0 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || usage
glmul=$1
shift
dir=${1:-${OUT:-}}
[ $# -ge 1 ] && shift
here=$(cd "$(dirname "$0")" && pwd)
[ -n "$dir" ] || dir=$here/out
if [ $# -ge 1 ]; then sizes="$*"; else sizes=${SIZES:-16384 32768}; fi

num() { case $2 in '' | *[!0-9]* | 0*) echo "run.sh: $1 $2: want a whole number ≥ 1" >&2; exit 2 ;; esac; }
num -r "$reps"
num -x "$xreps"
num -t "$tmo"
[ -z "$block" ] || num -b "$block"
for s in $sizes; do num SIZE "$s"; done
for p in ${pins//,/ }; do
	case $p in enabled | registered | disabled) ;; *) echo "run.sh: -p $p: want enabled, registered or disabled" >&2; exit 2 ;; esac
done
if [ ! -x "$glmul" ] || [ -d "$glmul" ]; then
	echo "run.sh: $glmul: no such executable (go build -o .device/glmul ./cmd/glmul)" >&2
	exit 2
fi
case $glmul in /*) ;; *) glmul=$PWD/$glmul ;; esac
py=${PYTHON:-python3}
if ! "$py" -c 'import numpy' 2>/dev/null; then
	if [ -z "${PYTHON:-}" ] && [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
		py=/usr/bin/python3
	else
		echo "run.sh: $py cannot import numpy (PYTHON names another python3)" >&2
		exit 2
	fi
fi
command -v timeout >/dev/null || { echo "run.sh: timeout (coreutils) is missing" >&2; exit 2; }
mkdir -p "$dir" || exit 2

if [ -n "${EPOCHREALTIME:-}" ]; then
	now() { printf '%s' "$EPOCHREALTIME"; }
else
	now() { date +%s.%N; }
fi

# step NAME OUTFILE CMD...: runs CMD under the time limit, stdout to
# OUTFILE, stderr to OUTFILE's .err; appends "NAME exit seconds command"
# to commands.tsv.
# quote ARG...: the command line, each argument shell-quoted only where it needs it
quote() {
	local a out=
	for a in "$@"; do
		case $a in '' | *[!A-Za-z0-9_./,:=+@%-]*) a=$(printf '%q' "$a") ;; esac
		out="$out${out:+ }$a"
	done
	printf '%s' "$out"
}

status=0
step() {
	local name=$1 out=$2 t0 t1 code secs
	shift 2
	echo "run.sh: $(date -u +%H:%M:%S) $name: $(quote "$@")" >&2
	t0=$(now)
	timeout -k 10 "$tmo" "$@" >"$out" 2>"${out%.*}.err"
	code=$?
	t1=$(now)
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	printf '%s\t%s\t%s\t%s\n' "$name" "$code" "$secs" "$(quote "$@")" >>"$dir/commands.tsv"
	case $code in
	0) echo "run.sh: $name: ok, $secs s" >&2 ;;
	124 | 137) echo "run.sh: $name: killed after the -t $tmo s limit" >&2; status=1 ;;
	*) echo "run.sh: $name: exit $code after $secs s; the end of ${out%.*}.err:" >&2; tail -n 5 "${out%.*}.err" | sed 's/^/    /' >&2; status=1 ;;
	esac
}

rm -f "$dir"/glmul-*.json "$dir"/glmul-*.err "$dir"/cublasxt-*.jsonl "$dir"/cublasxt-*.err "$dir/commands.tsv" "$dir/report.md"

# --- the machine ----------------------------------------------------------
"$glmul" -version -format json >"$dir/version.json" 2>/dev/null
"$glmul" -list-devices -format json >"$dir/egl-devices.json" 2>"$dir/egl-devices.err"
ncuda=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
# G: the GPUs that glmul -devices all takes (EGL's hardware devices), else nvidia-smi's count
negl=$("$py" - "$dir/egl-devices.json" <<'EOF' 2>/dev/null
import json, re, sys
d = json.load(open(sys.argv[1]))["egl_devices"]
print(sum(1 for x in d if not re.search(r"software|llvmpipe|mesa", x.get("name", ""), re.I)))
EOF
)
case $negl in '' | 0) negl=$ncuda ;; esac
case $negl in '' | 0) negl=1 ;; esac
{
	echo "date (UTC): $(date -u '+%Y-%m-%d %H:%M:%S')"
	echo "host: $(uname -srm), CPU $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs, $(free -g 2>/dev/null | awk '/^Mem:/{print $2 " GiB"}') memory"
	echo "glmul: $glmul: $("$glmul" -version 2>&1 | head -1)"
	echo "python: $("$py" -c 'import sys, numpy; print(sys.version.split()[0], "numpy", numpy.__version__)' 2>&1)"
	echo "torch: $("$py" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)' 2>&1 | tail -1)"
	echo "sizes: $sizes; glmul -reps $reps${GLMUL_FLAGS:+, GLMUL_FLAGS $GLMUL_FLAGS}; cuBLASXt: $([ $xt = 1 ] && echo "$xreps timed calls, pin $pins, block dim ${block:-default}" || echo "not run (-X)"); limit ${tmo} s a command"
	echo "GPUs: $ncuda (nvidia-smi), $negl for glmul -devices all (EGL)"
	echo
	echo '$ nvidia-smi --query-gpu=name,driver_version --format=csv'
	nvidia-smi --query-gpu=name,driver_version --format=csv 2>&1
	echo
	echo '$ nvidia-smi --query-gpu=index,pci.bus_id,memory.total,clocks.max.sm,power.limit --format=csv'
	nvidia-smi --query-gpu=index,pci.bus_id,memory.total,clocks.max.sm,power.limit --format=csv 2>&1
	echo
	echo '$ nvidia-smi topo -m'
	nvidia-smi topo -m 2>&1
	echo
	echo "\$ $glmul -list-devices"
	"$glmul" -list-devices 2>&1
} >"$dir/env.txt"
sed 's/^/# /' "$dir/env.txt" >&2

# --- the runs -------------------------------------------------------------
# shellcheck disable=SC2206 # GLMUL_FLAGS is word-split on purpose
gflags=(${GLMUL_FLAGS:-})
for n in $sizes; do
	step "glmul $n single" "$dir/glmul-$n-single.json" "$glmul" -n "$n" -reps "$reps" -format json "${gflags[@]}"
	step "glmul $n devices 1" "$dir/glmul-$n-devices-1.json" "$glmul" -n "$n" -devices 1 -reps "$reps" -format json "${gflags[@]}"
	list=1
	for ((g = 2; g < negl; g++)); do
		list=$list,$g
		step "glmul $n devices $list" "$dir/glmul-$n-devices-${list//,/-}.json" "$glmul" -n "$n" -devices "$list" -reps "$reps" -format json "${gflags[@]}"
	done
	step "glmul $n devices all" "$dir/glmul-$n-devices-all.json" "$glmul" -n "$n" -devices all -reps "$reps" -format json "${gflags[@]}"
	if [ "$xt" = 1 ]; then
		for p in ${pins//,/ }; do
			step "cublasxt $n $p" "$dir/cublasxt-$n-$p.jsonl" "$py" "$here/cublasxt.py" --reps "$xreps" --pin "$p" ${block:+--block-dim "$block"} --gpus 0 --gpus all "$n"
		done
	fi
done

# --- the report -----------------------------------------------------------
"$py" "$here/report.py" "$dir" >"$dir/report.md" 2>"$dir/report.err"
rc=$?
cat "$dir/report.md"
cat "$dir/report.err" >&2
[ $rc -eq 0 ] || status=1
echo "run.sh: files in $dir; exit status $status" >&2
exit $status
