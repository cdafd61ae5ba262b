#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages named as arguments that are not
# installed yet, and checks the Go toolchain. Run by 'make deps'.
set -euo pipefail

# go.mod asks for Go 1.26; a Go 1.21+ toolchain fetches it through the module
# proxy by itself (GOTOOLCHAIN=auto), an older one cannot.
gohelp="install Go 1.26 from https://go.dev/dl (or, on Debian 12, golang-1.21 from
  bookworm-backports and PATH=/usr/lib/go-1.21/bin:\$PATH: it fetches 1.26 itself);
  Debian 12's own golang-go is 1.19, too old"
if ! command -v "${GO:-go}" >/dev/null 2>&1; then
	echo "deps: no Go toolchain on PATH: $gohelp" >&2
	exit 1
fi
gov=$("${GO:-go}" env GOVERSION 2>/dev/null || echo go1.0)
minor=$(echo "$gov" | sed -E 's/^go1\.([0-9]+).*/\1/')
if [ "${minor:-0}" -lt 21 ] 2>/dev/null; then
	echo "deps: $gov is too old: $gohelp" >&2
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
# Wait up to 10 minutes for another apt (an unattended upgrade) to let go of
# its lock rather than fail at once; apt's own messages stay visible, so a
# failure says what went wrong.
lock=(-o DPkg::Lock::Timeout=600)
if ! $sudo apt-get "${lock[@]}" update -q >&2; then
	echo "deps: apt-get update failed (above); fix the package sources or the network and run again" >&2
	exit 1
fi
if ! $sudo apt-get "${lock[@]}" install -y -q --no-install-recommends "${missing[@]}" >&2; then
	echo "deps: installing ${missing[*]} failed (apt's messages above)" >&2
	exit 1
fi
echo "deps: done" >&2
