#!/usr/bin/env bash
# make.sh ARGS: make ARGS on a machine that may not have make yet (a plain
# Debian 12 has none). It installs make through scripts/deps.sh (which also
# checks the Go toolchain), then hands over to make, whose 'deps' step
# installs everything else the build and the tests need.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v make >/dev/null 2>&1; then
	scripts/deps.sh make
fi
exec make "$@"
