#!/usr/bin/env bash
# The measurements behind the figures that README.md and docs/results/ quote,
# each written to a file with its command, date, machine and glmul commit
# beside it (issue 23, item 9: no figure without the run that gave it).
#
#   scripts/results.sh llvmpipe [DIR]  this machine's Mesa llvmpipe through headless EGL
#                                      (and zink, softpipe: the README's support matrix);
#                                      DIR defaults to docs/results/llvmpipe. Builds
#                                      bin/glmul with go unless GLMUL names a binary.
#   scripts/results.sh h100 DIR        the same set and the GPU-only ones (n = 4096,
#                                      -mapped, OpenGL ES, panels, bench/compare.py),
#                                      on a GPU machine without Go: GLMUL is a prebuilt
#                                      glmul (default bin/glmul); nothing is built.
#
# Environment: GLMUL (the binary), GLMUL_COMMIT (the commit it was built from, where
# the tree has no .git), ONLY="table.json mul-4096.json ..." (run only the steps that
# write these files, e.g. to keep a device command under its time limit), CPU_MAX (the
# table's -cpu-max), PYTHON (h100: for bench/compare.py; default python3).
# Every command runs with DISPLAY and WAYLAND_DISPLAY unset and GLMUL_TUNE_CACHE
# pointing at no file, so the figures are those of the built-in kernel choices.
# DIR/results.md gets a section per step (command, UTC start, seconds, exit status,
# uname -a, CPU, the CPU time other processes took meanwhile, commit); the sections of
# steps not run this time are kept. On a shared machine, run it when nothing else runs.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
case "$mode" in
llvmpipe) dir=${2:-docs/results/llvmpipe} ;;
h100) dir=${2:-} ;;
*) dir= ;;
esac
[ -n "$dir" ] || { sed -n '2,23p' "$0" >&2; exit 2; }
mkdir -p "$dir"

# The tree's state, before anything here writes into it.
commit=${GLMUL_COMMIT:-}
if [ -z "$commit" ]; then
	if commit=$(git rev-parse --short HEAD 2>/dev/null); then
		# GIT_OPTIONAL_LOCKS=0: status must not refresh the index (this script changes no git state).
		if [ -n "$(GIT_OPTIONAL_LOCKS=0 git status --porcelain 2>/dev/null)" ]; then
			commit="$commit (dirty: uncommitted changes in the tree)"
		fi
	else
		commit="unknown (no git here; set GLMUL_COMMIT)"
	fi
fi

if [ -z "${GLMUL:-}" ]; then
	GLMUL=bin/glmul
	if [ "$mode" = llvmpipe ]; then
		echo "results: ${GO:-go} build -o $GLMUL ./cmd/glmul"
		"${GO:-go}" build -o "$GLMUL" ./cmd/glmul
	fi
fi
[ -x "$GLMUL" ] || { echo "results: $GLMUL is not an executable glmul (set GLMUL=path)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset DISPLAY WAYLAND_DISPLAY
export GLMUL_TUNE_CACHE=/nonexistent/glmul-tuned.json
# Mesa's Vulkan loader (zink) warns without it; any writable directory will do.
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$tmp}

# CPU time that every process on the machine used (/proc/stat, in ticks of 1/hz s),
# and the CPU time of this shell's finished children (the builtin times, saved
# to a file): their difference over a step is what other work took from it.
hz=$(getconf CLK_TCK)
busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
children_cpu() { awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); n += t[1] * 60 + t[2] } } END { print n + 0 }' "$1"; }

uname_a=$(uname -a)
cpu_model=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//')
cpus=$(nproc)
: >"$tmp/sections"
failed=0
last_ok= # the last step that succeeded, whose section derive adds to

# step FILE [EXTRA_FILES] -- [VAR=value ...] ARGS...: runs env VARs $GLMUL ARGS
# (or, when ARGS starts with "python", that program; with "bash", that
# script), stdout into DIR/FILE.
# EXTRA_FILES (comma-separated, may be empty) are the other files the command
# writes into DIR. A failed step leaves DIR/FILE as it was.
step() {
	local file=$1 extra=$2
	shift 3
	if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $file "* ]]; then
		return 0
	fi
	local vars=() args
	while [ $# -gt 0 ] && [[ $1 == [A-Z_]*=* ]]; do
		vars+=("$1")
		shift
	done
	if [ "${1:-}" = python ]; then
		shift
		args=("${PYTHON:-python3}" "$@")
	elif [ "${1:-}" = bash ]; then
		args=("$@")
	else
		args=("$GLMUL" "$@")
	fi
	local shown="${vars[*]}${vars[*]:+ }${args[*]}"
	echo "results: $shown > $dir/$file"
	local start t0 t1 rc=0 busy0 busy1
	start=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	busy0=$(busy_ticks)
	times >"$tmp/times0" # in this shell: its children's CPU time so far
	t0=$(date +%s%N)
	env "${vars[@]}" "${args[@]}" >"$tmp/out" 2>"$tmp/err" || rc=$?
	t1=$(date +%s%N)
	times >"$tmp/times1"
	busy1=$(busy_ticks)
	local secs own other
	secs=$(awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.1f", ns / 1e9 }')
	own=$(awk -v a="$(children_cpu "$tmp/times0")" -v b="$(children_cpu "$tmp/times1")" 'BEGIN { printf "%.1f", b - a }')
	other=$(awk -v t=$((busy1 - busy0)) -v hz="$hz" -v own="$own" 'BEGIN { o = t / hz - own; printf "%.1f", o < 0 ? 0 : o }')
	if awk -v o="$other" -v s="$secs" -v c="$cpus" 'BEGIN { exit !(o > 0.5 && o > 0.1 * s * c) }'; then
		echo "results: other processes took $other CPU-seconds of the $secs s × $cpus CPUs: $file's figures may be low; run it again on an idle machine" >&2
	fi
	if [ $rc -eq 0 ]; then
		mv "$tmp/out" "$dir/$file"
		last_ok=$file
	else
		echo "results: exit $rc after $secs s; $dir/$file left as it was:" >&2
		tail -n 20 "$tmp/err" >&2
		failed=1
		return 0
	fi
	{
		echo "## \`$file\`"
		echo
		echo "- command: \`$shown > $dir/$file\`"
		[ -z "$extra" ] || echo "- also wrote: ${extra//,/, }"
		echo "- started $start, ran $secs s, exit $rc"
		echo "- machine: \`$uname_a\`; CPU: $cpu_model, $cpus CPUs"
		echo "- CPU time while it ran: this command $own s, other processes $other s (of $secs s × $cpus CPUs)"
		echo "- glmul: $commit"
		if [ -s "$tmp/err" ]; then
			echo "- stderr:"
			echo
			sed 's/^/      /' "$tmp/err" | head -n 20
		fi
		echo
	} >>"$tmp/sections"
}

# derive FILE SOURCE ARGS...: a file rendered from the output of the step just
# run (glmul table -from), noted in that step's section; nothing measured.
derive() {
	local file=$1 source=$2
	shift 2
	[ "$last_ok" = "$source" ] || return 0
	echo "results: $GLMUL $* > $dir/$file"
	if "$GLMUL" "$@" >"$tmp/derived"; then
		mv "$tmp/derived" "$dir/$file"
		printf -- '- rendered: `%s > %s`\n\n' "$GLMUL $*" "$dir/$file" >"$tmp/derived.note"
		# Put the note at the end of the source's section (the last one written).
		sed -i '$d' "$tmp/sections" # the section's closing blank line
		cat "$tmp/derived.note" >>"$tmp/sections"
	else
		failed=1
	fi
}

egl=(-backend egl -progress off)
generic=fast:128x128x8_8x8 # tuning.GenericDefault: the GPU family's kernel for an untuned vendor
case "$mode" in
llvmpipe)
	sizes=128,256,512,1024
	cpu_max=${CPU_MAX:-1024}
	n=1024
	;;
h100)
	sizes=128,256,512,1024,2048,4096
	# The naive loop at 4096 takes more than 11 minutes on the H100 host's Xeon.
	cpu_max=${CPU_MAX:-2048}
	n=1024
	;;
esac

step devices.txt "" -- devices
step "mul-$n.txt" "" -- -n $n "${egl[@]}"
step "mul-$n.json" "" -- -n $n "${egl[@]}" -format json
step "mul-$n-tiled32.json" "" -- -n $n "${egl[@]}" -format json -kernel tiled32
step table.json "$dir/fig3.png,$dir/fig3.svg" -- table -sizes $sizes -kernels tiled32,fast -cpu-max "$cpu_max" \
	-compare paper -format json -progress off -backend egl -plot "$dir/fig3.png,$dir/fig3.svg"
derive table.md table.json table -from "$dir/table.json" -compare paper -format markdown
derive table.csv table.json table -from "$dir/table.json" -compare paper -format csv

case "$mode" in
llvmpipe)
	step "mul-$n-fast.json" "" -- -n $n "${egl[@]}" -format json -kernel $generic
	step tune-square.json "" -- tune -classes square -save=false -format json -progress off -backend egl
	# Mesa's other drivers on the same CPU (scripts/test-drivers.sh sets them so).
	zink=(MESA_LOADER_DRIVER_OVERRIDE=zink LIBGL_ALWAYS_SOFTWARE=1)
	step zink-mul-512.json "" -- "${zink[@]}" -n 512 "${egl[@]}" -format json
	step zink-mul-512-fast.json "" -- "${zink[@]}" -n 512 "${egl[@]}" -format json -kernel $generic
	step softpipe-mul-128.json "" -- GALLIUM_DRIVER=softpipe MESA_GL_VERSION_OVERRIDE=4.3 MESA_GLSL_VERSION_OVERRIDE=430 \
		-n 128 "${egl[@]}" -format json
	;;
h100)
	step mul-4096.txt "" -- -n 4096 "${egl[@]}"
	step mul-4096.json "" -- -n 4096 "${egl[@]}" -format json
	step mul-4096-tiled32.json "" -- -n 4096 "${egl[@]}" -format json -kernel tiled32
	step mul-4096-mapped.json "" -- -n 4096 "${egl[@]}" -format json -mapped
	step mul-4096-gles.json "" -- -n 4096 -backend gles -progress off -format json
	step mul-16384-maxgpumem2g.json "" -- -n 16384 "${egl[@]}" -format json -max-gpu-mem 2GiB
	step mul-32768.json "" -- -n 32768 "${egl[@]}" -format json
	if [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" compare.txt "* ]]; then
		if "${PYTHON:-python3}" -c 'import torch' 2>/dev/null; then
			step compare.txt "$dir/compare.csv" -- python bench/compare.py --glmul "$GLMUL" --csv "$dir/compare.csv"
		else
			echo "results: compare.txt skipped: ${PYTHON:-python3} has no PyTorch" >&2
		fi
	fi
	;;
esac

# files.md: glmul mul on users' files against NumPy (and PyTorch where it has
# CUDA), bench/files; the inputs are made first, in FILES_DIR (default: a
# temporary directory; the big cases take 3.2 GiB).
if [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" files.md "* ]]; then
	cases="input_bound output_bound input_bound_f8 input_bound_fortran tall_a thin_big_c"
	[ "$mode" = h100 ] && cases="square8192 $cases"
	files=${FILES_DIR:-$tmp/files}
	py=${PYTHON:-python3}
	"$py" -c 'import numpy' 2>/dev/null || py=/usr/bin/python3
	if "$py" bench/files/make_inputs.py "$files" $cases >&2; then
		step files.md "" -- bash bench/files/run.sh -r 3 -g "$GLMUL" "$files" $cases
	else
		echo "results: files.md skipped: bench/files/make_inputs.py failed (NumPy missing?)" >&2
		failed=1
	fi
fi

# results.md: the preamble, then the sections kept from an earlier run (steps not
# run this time), then this run's.
{
	echo "# How the files here were made"
	echo
	echo "Written by \`scripts/results.sh $mode\`; do not edit by hand. Every command ran with"
	echo "\`DISPLAY\` and \`WAYLAND_DISPLAY\` unset (headless EGL) and"
	echo "\`GLMUL_TUNE_CACHE=$GLMUL_TUNE_CACHE\` (no tuning cache: the built-in kernel"
	echo "choices). Each section below is one command: its output file, when it ran (UTC), for"
	echo "how long, on what, from which glmul commit (\"dirty\": the binary was built from a"
	echo "tree with uncommitted changes), and how much CPU time other processes took meanwhile"
	echo "(where that is large, the figures are low)."
	echo
	if [ -f "$dir/results.md" ]; then
		awk -v new="$tmp/sections" '
			BEGIN { while ((getline l < new) > 0) if (l ~ /^## `/) rerun[l] = 1 }
			/^## `/ { keep = !(($0) in rerun) }
			/^# / { keep = 0 }
			keep { print; last = $0 }
			END { if (last != "") print "" }' "$dir/results.md"
	fi
	cat "$tmp/sections"
} >"$tmp/results.md"
printf '%s\n' "$(cat "$tmp/results.md")" >"$dir/results.md" # without the last blank line
echo "results: wrote $dir/results.md"
exit $failed
