#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages named as arguments that are not
# installed yet, and checks the Go toolchain. Run by 'make deps'.
set -euo pipefail

# go.mod asks for Go 1.26; a Go 1.21+ toolchain fetches it through the module
# proxy by itself (GOTOOLCHAIN=auto), an older one cannot.
if ! command -v "${GO:-go}" >/dev/null 2>&1; then
	echo "deps: no Go toolchain on PATH; install Go 1.26 or later (https://go.dev/dl) and run again" >&2
	exit 1
fi
gov=$("${GO:-go}" env GOVERSION 2>/dev/null || echo go1.0)
minor=$(echo "$gov" | sed -E 's/^go1\.([0-9]+).*/\1/')
if [ "${minor:-0}" -lt 21 ] 2>/dev/null; then
	echo "deps: $gov is too old: install Go 1.26 or later (https://go.dev/dl)" >&2
	exit 1
fi

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "deps: not a Debian/Ubuntu system; make sure these (or your system's equivalents) are installed: $*" >&2
	exit 0
fi

missing=()
for p in "$@"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "deps: these packages are missing and this user cannot install them: ${missing[*]}" >&2
		exit 1
	fi
	sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done" >&2
