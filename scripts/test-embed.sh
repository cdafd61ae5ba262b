#!/usr/bin/env bash
# Embedding acceptance on Mesa (issue 22), beside `make test`:
#
#   engine host   testdata/embedhost: a game engine written from glmul's docs
#                 alone (its own context, state, buffers and GL-call
#                 interposer; ~14,000 checks), run with its GL context from a
#                 hidden GLFW window under Xvfb and from headless EGL
#   raylib        examples/raylib: raylib-go with its OpenGL 4.3 back end and
#                 its own GLFW, borrowing raylib's context; it must link with
#                 no linker flags (glcompute links no GLFW of its own) and
#                 multiply correctly, under Xvfb
#
# usage: scripts/test-embed.sh [host] [raylib]   (default: both)
# testdata/embedhost is a verbatim copy of the acceptance program
# (../shared/embed-host at the time of issue 22): fix the library, never it.
set -euo pipefail
cd "$(dirname "$0")/.."
what=("$@")
[ ${#what[@]} -gt 0 ] || what=(host raylib)
for w in "${what[@]}"; do
	case "$w" in
	host)
		echo "== engine host (testdata/embedhost), -ctx glfw under Xvfb and -ctx egl"
		OUT_BIN="${TMPDIR:-/tmp}/glmul-embedhost" bash testdata/embedhost/run.sh .
		;;
	raylib)
		echo "== raylib-go (opengl43) borrowing its context: examples/raylib"
		bin="${TMPDIR:-/tmp}/glmul-raylib"
		(cd examples/raylib && CGO_ENABLED=1 ${GO:-go} build -tags "opengl43 x11" -o "$bin" .)
		xvfb-run -a -s "-screen 0 640x480x24" "$bin" -frames 5
		;;
	*)
		echo "test-embed: unknown part $w (host, raylib)" >&2
		exit 2
		;;
	esac
done
