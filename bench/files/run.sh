#!/usr/bin/env bash
# bench/files/run.sh: `glmul mul` on files against NumPy (and PyTorch on a
# CUDA GPU), whole processes, warm page cache; Markdown on stdout.
#
# usage: bench/files/run.sh [-r REPS] [-g GLMUL] [-k] [-f] DIR CASE...
#
#   DIR/CASE/A.npy and B.npy come from bench/files/make_inputs.py DIR CASE...
#   -r REPS   timed runs of each command (default 3), alternating
#             glmul, numpy, torch, glmul, ...; one untimed warm-up run of
#             each comes first (page cache warm for all)
#   -g GLMUL  the glmul binary (default bin/glmul)
#   -k        keep the products DIR/CASE/C_{glmul,numpy,torch}.npy (default:
#             removed after the case's check; up to 1.5 GiB each)
#   -f        the peers fsync C too (glmul always does: its writes are
#             atomic and durable); default: plain np.save, as users call it
#   GLMUL_FLAGS  extra flags for glmul mul (word-split), e.g. "-kernel tiled32"
#   GLMUL_COMMIT the commit the binary was built from (default: this checkout's)
#   PYTHON       the python3 to run the peers with (default python3, else
#                /usr/bin/python3 when only that one imports numpy)
#
# Exit status: 0 all commands ran and glmul's C matched NumPy's (limits
# missed are FAILs in the tables, not an exit status); 1 a command failed,
# a case's inputs were missing or a C differed; 2 usage error or a missing
# tool (/usr/bin/time, numpy, the glmul binary).
set -u
export LC_ALL=C

usage() {
	sed -n '5,23p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

reps=3 glmul=bin/glmul keep=0 fsync=
while getopts 'r:g:kfh' opt; do
	case $opt in
	r) reps=$OPTARG ;;
	g) glmul=$OPTARG ;;
	k) keep=1 ;;
	f) fsync=--fsync ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || usage
case $reps in '' | *[!0-9]* | 0) echo "run.sh: -r $reps: want a whole number ≥ 1" >&2; exit 2 ;; esac
dir=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}

if [ ! -x /usr/bin/time ]; then
	echo "run.sh: /usr/bin/time (GNU time) is missing; it measures wall time and peak RSS. This script installs nothing: install the package 'time' and rerun." >&2
	exit 2
fi
if ! "$py" -c 'import numpy' 2>/dev/null; then
	# e.g. a pyenv python3 first in PATH, the distribution's numpy under /usr/bin/python3
	if [ -z "${PYTHON:-}" ] && [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
		py=/usr/bin/python3
	else
		echo "run.sh: $py cannot import numpy (PYTHON names another python3)" >&2
		exit 2
	fi
fi
if [ ! -x "$glmul" ] || [ -d "$glmul" ]; then
	echo "run.sh: -g $glmul: no such executable (go build -o bin/glmul ./cmd/glmul)" >&2
	exit 2
fi
case $glmul in */*) ;; *) glmul=./$glmul ;; esac

# a clock with ms resolution or better: bash 5's $EPOCHREALTIME, else date
if [ -n "${EPOCHREALTIME:-}" ]; then
	now() { printf '%s' "$EPOCHREALTIME"; }
else
	now() { date +%s.%N; }
fi

tools="glmul numpy"
torch_note=$("$py" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda, "available" if torch.cuda.is_available() else "not available")' 2>/dev/null) || torch_note="not importable"
case $torch_note in *" available") tools="glmul numpy torch" ;; esac

# --- header -------------------------------------------------------------
if command -v nvidia-smi >/dev/null 2>&1; then
	gpu=$(nvidia-smi -L 2>/dev/null | sed 's/ (UUID: [^)]*)//' | paste -sd ';' -)
fi
renderer=$("$glmul" devices 2>/dev/null | awk -F ' [|] ' '/^ +yes: /{print $2; exit}')
[ -n "${gpu:-}" ] || gpu="${renderer:-unknown} (glmul devices' GL renderer; no nvidia-smi)"
commit=${GLMUL_COMMIT:-unknown} # GLMUL_COMMIT: the commit the binary was built from, where this tree's git cannot say
if [ -z "${GLMUL_COMMIT:-}" ] && git -C "$here" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	commit=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)
	[ -z "$(git -C "$here" status --porcelain --untracked-files=no 2>/dev/null)" ] || commit="$commit (tracked files modified)"
fi
cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)

cat <<EOF
# glmul mul on files against NumPy and PyTorch

- date (UTC): $(date -u '+%Y-%m-%d %H:%M:%S')
- machine: $(uname -m), CPU ${cpu:-unknown}, nproc $(nproc)
- GPU: $gpu
- glmul's GL renderer: ${renderer:-none found by \`glmul devices\`}
- glmul: $glmul, $("$glmul" -version 2>&1 | head -1), git commit of this checkout: $commit
- python: $("$py" -c 'import sys, numpy; print(sys.version.split()[0], "numpy", numpy.__version__)'), torch: $torch_note
- each command is a whole process (start-up, reading A and B, the product, writing C) under \`/usr/bin/time -f '%e %M'\`:
  wall seconds from the shell's clock around it (ms; time's %e has 10 ms steps), peak RSS (%M, KiB) from time
- page cache warm, not dropped: each command runs once untimed first (warm-up), then $reps timed run(s) of each, alternating $(echo $tools | sed 's/ /, /g')
- glmul fsyncs C (atomic write); the peers $( [ -n "$fsync" ] && echo "fsync C too (-f)" || echo "do not (plain np.save; -f makes them)")
- limits (issue "glmul mul at disk speed"; MB read as MiB): input_bound glmul ≤ 2.0× NumPy, output_bound ≤ 1.2× NumPy (min wall);
  glmul peak RSS ≤ 1.3×(A+B+C) + 64 MiB for those two, ≤ 512 MiB for tall_a and thin_big_c; square8192 glmul ≤ PyTorch (min wall)
- commands, for each CASE:

\`\`\`
/usr/bin/time -f '%e %M' $glmul mul $dir/CASE/A.npy $dir/CASE/B.npy -o $dir/CASE/C_glmul.npy${GLMUL_FLAGS:+ $GLMUL_FLAGS}
/usr/bin/time -f '%e %M' $py $here/numpy_mul.py $dir/CASE/A.npy $dir/CASE/B.npy $dir/CASE/C_numpy.npy${fsync:+ $fsync}
EOF
case $tools in *torch*) echo "/usr/bin/time -f '%e %M' $py $here/torch_mul.py $dir/CASE/A.npy $dir/CASE/B.npy $dir/CASE/C_torch.npy${fsync:+ $fsync}" ;; esac
echo '```'
echo

# --- runs ---------------------------------------------------------------
# timed TOOL REP: runs TOOL's command on the case once, appending
# "tool rep wall rss exit" to the case's runs.tsv; stdout and stderr go
# to log/TOOL.REP.{out,err}.
timed() {
	local tool=$1 rep=$2 log=$casedir/log/$1.$2
	local -a cmd
	case $tool in
	glmul) cmd=("$glmul" mul "$casedir/A.npy" "$casedir/B.npy" -o "$casedir/C_glmul.npy") ;;
	numpy) cmd=("$py" "$here/numpy_mul.py" "$casedir/A.npy" "$casedir/B.npy" "$casedir/C_numpy.npy") ;;
	torch) cmd=("$py" "$here/torch_mul.py" "$casedir/A.npy" "$casedir/B.npy" "$casedir/C_torch.npy") ;;
	esac
	# shellcheck disable=SC2206 # GLMUL_FLAGS is word-split on purpose
	[ "$tool" = glmul ] && cmd+=(${GLMUL_FLAGS:-})
	[ "$tool" != glmul ] && [ -n "$fsync" ] && cmd+=("$fsync")
	local t0 t1 code line
	t0=$(now)
	/usr/bin/time -f '%e %M' -o "$log.time" "${cmd[@]}" >"$log.out" 2>"$log.err"
	code=$?
	t1=$(now)
	line=$(tail -n 1 "$log.time" 2>/dev/null)
	set -- $line
	printf '%s\t%s\t%s\t%s\t%s\n' "$tool" "$rep" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')" \
		"${2:-0}" "$code" >>"$casedir/log/runs.tsv"
}

status=0
summary=()
for case in "$@"; do
	casedir=$dir/$case
	if [ ! -f "$casedir/A.npy" ] || [ ! -f "$casedir/B.npy" ]; then
		printf '### %s\n\nFAIL: %s/A.npy or B.npy missing: run %s/make_inputs.py %s %s\n\n' "$case" "$casedir" "$here" "$dir" "$case"
		summary+=("| $case | FAIL (no inputs) | — |")
		status=1
		continue
	fi
	rm -rf "$casedir/log"
	rm -f "$casedir"/C_glmul.npy "$casedir"/C_numpy.npy "$casedir"/C_torch.npy
	mkdir -p "$casedir/log"
	for rep in $(seq 0 "$reps"); do # 0: the untimed warm-up
		for tool in $tools; do
			timed "$tool" "$rep"
		done
	done
	"$py" "$here/report.py" "$casedir" "$case" $tools || status=1
	IFS=$'\t' read -r _ ok limits <"$casedir/log/summary.tsv" 2>/dev/null || { ok=FAIL limits=?; status=1; }
	summary+=("| $case | $ok | $limits |")
	[ "$keep" = 1 ] || rm -f "$casedir"/C_glmul.npy "$casedir"/C_numpy.npy "$casedir"/C_torch.npy
done

echo "### summary"
echo
echo "| case | commands and C | limits FAILed |"
echo "|---|---|--:|"
printf '%s\n' "${summary[@]}"
echo
echo "logs (glmul's reports included): $dir/CASE/log/; exit status $status"
exit $status
