#!/usr/bin/env bash
# glmul for Windows, built on Linux with MinGW-w64, and tested under Wine
# (issue 26). Wine + Xvfb give a WGL context on Mesa llvmpipe: the GLFW
# path a Windows user takes.
#
#   scripts/windows.sh build [OUT]   cross-compile glmul.exe (default bin/glmul.exe)
#   scripts/windows.sh test          the library's GL suites (glcompute, its stream,
#                                    devgroup, glblas and pinned), glmul.exe -n 64
#                                    and glmul.exe table -sizes 32,64, under Wine
#
# Needs gcc-mingw-w64-x86-64 (build), wine, wine64 and xvfb (test): `make
# windows` / `make test-windows` install them. The Wine prefix is kept in
# ${XDG_CACHE_HOME:-~/.cache}/glmul/wine between runs.
#
# Wine 8 (Debian 12) lacks bcryptprimitives.dll, whose ProcessPrng every Go
# ≥ 1.22 program calls at start ("bcryptprimitives.dll not found"):
# scripts/windows/processprng.c builds a stand-in into the prefix. Wine 9
# ships one.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
export GOOS=windows GOARCH=amd64 CGO_ENABLED=1 CC=${CC_WINDOWS:-x86_64-w64-mingw32-gcc}

build() {
	out=${1:-bin/glmul.exe}
	mkdir -p "$(dirname "$out")"
	$GO build -o "$out" ./cmd/glmul
	echo "built $out (windows/amd64)"
}

prefix() {
	# A crash ends the program (no winedbg waiting for a debugger that never
	# comes): a CI run then fails at once instead of at its time limit.
	export WINEDEBUG=-all WINEARCH=win64 WINEDLLOVERRIDES="winedbg.exe=d"
	export WINEPREFIX=${WINEPREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/glmul/wine}
	local dll=$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll
	if [ ! -f "$WINEPREFIX/system.reg" ]; then
		mkdir -p "$WINEPREFIX"
		echo "windows: making a Wine prefix in $WINEPREFIX (once)"
		xvfb-run -a wine wineboot -i >/dev/null 2>&1 || true
		wineserver -w || true
	fi
	if [ ! -f "$dll" ]; then
		$CC -shared -O2 -o "$dll" scripts/windows/processprng.c -ladvapi32
	fi
}

wine_run() { # wine_run DIR PROGRAM ARGS...: PROGRAM under Wine + Xvfb, from DIR
	local dir=$1
	shift
	(cd "$dir" && xvfb-run -a -s "-screen 0 640x480x24" wine "$@")
}

test_windows() {
	prefix
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	build "$tmp/glmul.exe"
	# glcompute, and its packages built on a Device (their tests open it
	# through internal/gltest, which takes GLFW on Windows).
	for pkg in glcompute glcompute/stream glcompute/devgroup glcompute/glblas glcompute/pinned; do
		$GO test -c -o "$tmp/$(basename "$pkg").test.exe" "./$pkg"
		wine_tests "$pkg" "$tmp/$(basename "$pkg").test.exe"
	done
	echo "== glmul.exe -n 64"
	exe_run "$tmp/glmul.exe" -n 64
	echo "== glmul.exe table -sizes 32,64"
	exe_run "$tmp/glmul.exe" table -sizes 32,64 -format markdown
}

wine_tests() { # wine_tests PKG EXE: a package's test binary under Wine, from its directory
	local pkg=$1 exe=$2 log
	log="$tmp/$(basename "$pkg").log"
	echo "== $pkg tests under Wine (WGL through GLFW, Mesa llvmpipe)"
	# Wine 8 with Mesa 22's llvmpipe has crashed the test process now and
	# then, every test before the crash passing: twice in about a dozen CI
	# runs (2026-11-27), in different tests (exit status 5 at
	# TestWaveSplitBands, which skips under Wine; then "wine: Unhandled
	# page fault on execute access" at TestBLASOnCPUDriver), not in the
	# next run; on 2026-11-28, with other work loading the machine's 2
	# cores, in a run and in the run after it (at the same address,
	# 0x259D937EA, in different tests), so that CI failed once; alone on
	# the machine, never. A run that ends in that crash, and only such a run (no
	# failed test, no Go panic), is run once more, saying so; a crash that
	# comes back fails.
	local tries=0 rc
	while :; do
		tries=$((tries + 1))
		rc=0
		GLMUL_REQUIRE_GL=1 wine_run "$pkg" "$exe" -test.count=1 -test.v -test.timeout 600s >"$log" 2>&1 || rc=$?
		if [ "$rc" -ne 0 ] && [ "$tries" -eq 1 ] && grep -q 'Unhandled page fault' "$log" && ! grep -qE -- '--- FAIL|panic:' "$log"; then
			echo "windows: the $pkg test process crashed under Wine (exit status $rc) with no test failed; its last lines:"
			grep -B3 -A3 'Unhandled page fault' "$log" | head -20
			echo "windows: running the $pkg tests once more"
			continue
		fi
		break
	done
	[ "$rc" -eq 0 ] || {
		# A failed test's messages follow its line. Without one (Xvfb or
		# Wine failed to start, a crash), the log's end says why. grep
		# finding nothing must not end the script here (pipefail).
		grep -E -A12 -- '--- FAIL|panic:' "$log" | head -80 || true
		echo "-- the log's last lines:"
		tail -20 "$log"
		echo "windows: $pkg tests FAILED under Wine (exit status $rc)" >&2
		exit 1
	}
	echo "ok   $pkg   $(grep -c -- '--- PASS' "$log") passed $(grep -c -- '--- SKIP' "$log") skipped"
	# (grep finds no skip in a package without any: not a failure)
	{ grep -E -- '--- SKIP' "$log" || true; } | sed 's/^ *//' | sort | uniq -c | sed 's/^/     /' | head -20
}

exe_run() { # exe_run PROGRAM ARGS...: wine_run, once more after the crash above
	# The crash described in test_windows came to glmul.exe -n 64 too, after
	# its report (2026-11-28, once in four runs while other work loaded the
	# machine's 2 cores, at the same address each time: 0x259D937EA). On
	# 2026-11-29 glmul.exe table died the same way after its table, but by
	# a signal, not a Windows exception: SIGKILL (exit status 137) in one
	# CI run, SIGSEGV (139) in one of 36 runs by hand, this binary and
	# the one at d14dce7 both passing the other 35. Run once more in
	# those cases only (a failed check exits 1, a Go panic 2), saying so.
	local out rc=0
	out=$(wine_run . "$@" 2>&1) || rc=$?
	if [ "$rc" -gt 128 ] || { [ "$rc" -ne 0 ] && grep -q 'Unhandled page fault' <<<"$out"; }; then
		grep 'Unhandled page fault' <<<"$out" | head -1 || true
		echo "windows: $(basename "$1") crashed under Wine (exit status $rc); running it once more"
		rc=0
		out=$(wine_run . "$@" 2>&1) || rc=$?
	fi
	grep -v '^X connection' <<<"$out" || true
	return "$rc"
}

case "${1:-}" in
build) build "${2:-}" ;;
test) test_windows ;;
*)
	sed -n '2,17p' "$0" >&2
	exit 2
	;;
esac
