#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages named as arguments that are not
# installed yet, and checks the Go toolchain. Run by 'make deps'.
set -euo pipefail

need_go="1.24"
if ! command -v "${GO:-go}" >/dev/null 2>&1; then
	echo "deps: no Go toolchain on PATH; install Go $need_go or later (https://go.dev/dl) and run again" >&2
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
