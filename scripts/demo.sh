#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: install what is missing, build adump, capture a synthetic 4-stream workload
# from the simulated NPU and check every dump file it wrote.
#   scripts/demo.sh [OUT_DIR]        (default /tmp/adump-demo)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/adump-demo}

scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DADUMP_BUILD_TESTS=OFF -DADUMP_SKIP= >/dev/null
cmake --build build -j"$(nproc)"
# The `adump` command (on PATH: /usr/local/bin), the library and headers, and the Python
# package for Debian's /usr/bin/python3 (the interpreter with numpy and torch).
cmake --install build >/dev/null
echo "adump command installed: $(command -v adump) ($(adump --version))"
if [[ -f build/python/adump/__init__.py ]]; then
	/usr/bin/python3 -c "import adump" && echo "adump python package installed for /usr/bin/python3"
fi

rm -rf "$out"
echo
echo "== adump bench --streams 4 --ops 200 --min-size 1K --max-size 4M --out $out"
build/tools/adump bench --streams 4 --ops 200 --min-size 1K --max-size 4M --out "$out"
if build/tools/adump verify --help >/dev/null 2>&1; then
	echo
	echo "== adump verify $out"
	build/tools/adump verify --quiet "$out"
fi
