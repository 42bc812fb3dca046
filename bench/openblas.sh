#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Prints a directory holding Debian's OpenBLAS (libopenblas0-serial) as libblas.so.3, for
# bench/torch_bench.py --blas: unpacked from the package into DIR (default
# ~/.cache/adump-bench/openblas), not installed, so nothing else on the machine changes.
# torch on Debian takes libblas.so.3 from the alternatives, the reference BLAS unless a
# faster one is installed: a transformer step of ~900 ms of which the tools' few ms are a
# fraction smaller than the machine's swings. Single-threaded OpenBLAS brings it to ~160 ms.
#   bench/openblas.sh [DIR]
set -euo pipefail
dir=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/adump-bench/openblas}
lib=$dir/usr/lib/x86_64-linux-gnu/openblas-serial
if [[ ! -f $lib/libblas.so.3 ]]; then
	mkdir -p "$dir"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && apt-get download libopenblas0-serial >/dev/null 2>&1) ||
		{ echo "openblas.sh: apt-get download libopenblas0-serial failed" >&2; exit 1; }
	dpkg-deb -x "$tmp"/libopenblas0-serial_*.deb "$dir"
fi
[[ -f $lib/libblas.so.3 ]] || { echo "openblas.sh: no libblas.so.3 in $lib" >&2; exit 1; }
echo "$lib"
