#!/usr/bin/env bash
# The whole test suite as prebuilt binaries, for a GPU machine without Go.
#
#   scripts/gl-suite.sh build DIR   here: one test binary per package (go test -c, gzipped) into DIR
#   scripts/gl-suite.sh run DIR     there, from the project root: run them all, each in its
#                                   package's directory; logs in DIR/logs; exit 1 if any fails
#
# Extra arguments after DIR go to every test binary (e.g. -test.run 'Gemm|Batched').
# GLMUL_REQUIRE_GL=1 makes a GL test that cannot get a context fail; without a
# display the GLFW tests need an X server (Xvfb) on PATH.
set -euo pipefail
cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { sed -n '2,10p' "$0" >&2; exit 2; }
shift 2
case "$cmd" in
build)
	mkdir -p "$dir"
	: >"$dir/manifest"
	root=$(go list -m)
	for pkg in $(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./...); do
		rel=${pkg#"$root"}; rel=${rel#/}; rel=${rel:-.}
		bin="$(echo "$rel" | tr / _).test"
		go test -c -ldflags="-s -w" -o "$dir/$bin" "$pkg"
		gzip -f "$dir/$bin" # the device tool carries 64 MiB at most
		printf '%s\t%s\n' "$bin" "$rel" >>"$dir/manifest"
	done
	echo "built $(wc -l <"$dir/manifest") test binaries into $dir"
	;;
run)
	dir=$(cd "$dir" && pwd)
	mkdir -p "$dir/logs"
	bins=$(mktemp -d)
	trap 'rm -rf "$bins"' EXIT
	failed=0
	while IFS=$'\t' read -r bin rel; do
		gunzip -c "$dir/$bin.gz" >"$bins/$bin" && chmod +x "$bins/$bin"
		log="$dir/logs/${bin%.test}.log"
		start=$(date +%s%N)
		if (cd "$rel" && "$bins/$bin" -test.v -test.count=1 "$@") >"$log" 2>&1; then status=ok; else status=FAIL; failed=1; fi
		ms=$((($(date +%s%N) - start) / 1000000))
		pass=$(grep -c -- '--- PASS' "$log" || true)
		skip=$(grep -c -- '--- SKIP' "$log" || true)
		fail=$(grep -c -- '--- FAIL' "$log" || true)
		printf '%-4s %-36s %4d.%01ds  %4d passed %3d skipped %3d failed\n' "$status" "$rel" $((ms / 1000)) $((ms % 1000 / 100)) "$pass" "$skip" "$fail"
		if [ "$status" = FAIL ]; then
			grep -E -- '--- FAIL|^\s+\S+_test\.go:[0-9]+:|panic:' "$log" | head -40 | sed 's/^/     /'
		fi
	done <"$dir/manifest"
	exit $failed
	;;
*)
	sed -n '2,10p' "$0" >&2; exit 2 ;;
esac
