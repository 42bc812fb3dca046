#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `adump report` at scale (issue 33 item 5): two captures of the bench workload with small
# ops (same seed; the second's every element perturbed in its lowest bit, so every row has
# figures), compared with --html into one page of ROWS rows or more, then opened in headless
# Chromium, alternated with an empty page in the same sitting. Prints the page's bytes, the
# time the page's own script says it was drawn and usable (performance.now() at the end of
# its start-up, data-ready-ms) and its load event, and the wall time of Chromium to the
# dumped DOM against the empty page's (Chromium's start-up; --dump-dom's serialising of the
# page's megabytes of inline data is in the report's wall time too, not in the page's). Deletes the dumps at the end (KEEP=1 keeps them).
#
#   bench/report.sh [-a ADUMP] [-d SCRATCH_DIR] [-r ROWS (default 20000)] [-n ROUNDS (3)]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
adump=${ADUMP:-$here/../build/tools/adump}
scratch=${TMPDIR:-/tmp}/adump-report.$$
rows=20000
rounds=3
browser=${CHROMIUM:-/usr/bin/chromium}
while getopts "a:d:r:n:" opt; do
	case $opt in
	a) adump=$OPTARG ;;
	d) scratch=$OPTARG ;;
	r) rows=$OPTARG ;;
	n) rounds=$OPTARG ;;
	*) echo "usage: $0 [-a ADUMP] [-d SCRATCH_DIR] [-r ROWS] [-n ROUNDS]" >&2; exit 2 ;;
	esac
done
[[ -x $adump ]] || { echo "report.sh: $adump is not built" >&2; exit 1; }
[[ -x $browser ]] || { echo "report.sh: $browser is missing (apt install chromium)" >&2; exit 1; }
mkdir -p "$scratch"
trap '[[ -n ${KEEP:-} ]] || rm -rf "$scratch"' EXIT

# An op of the workload has three tensors (self, other, out): one row each, of 1-4 KiB: ROWS
# rows take about ROWS x 2.2 KiB (measured: 20,000 asked, ~20,200 made).
total=$(( rows * 2200 ))
workload=(--streams 2 --min-size 1K --max-size 4K --total "$total" --seed 5)
"$adump" bench "${workload[@]}" --out "$scratch/golden" >/dev/null
"$adump" bench "${workload[@]}" --out "$scratch/my" >/dev/null
golden=$(ls -d "$scratch"/golden/*/0)
my=$(ls -d "$scratch"/my/*/0)
/usr/bin/python3 - "$my" <<'PY'
import os, struct, sys
import numpy as np
d = sys.argv[1]
for f in os.listdir(d):
    p = os.path.join(d, f)
    with open(p, 'r+b') as fh:
        hlen = struct.unpack('<Q', fh.read(8))[0]
        fh.seek(8 + hlen)
        body = np.frombuffer(fh.read(), dtype=np.uint8).copy()
        body ^= 1
        fh.seek(8 + hlen)
        fh.write(body.tobytes())
PY
page=$scratch/page.html
"$adump" compare -m "$my" -g "$golden" -out "$scratch/out" --quiet --html "$page" || true
[[ -s $page ]] || { echo "report.sh: no page written" >&2; exit 1; }
got=$(( $(wc -l <"$(ls "$scratch"/out/result_*.csv | head -1)") - 1 ))
printf '<!doctype html><html><body data-ready="1"></body></html>\n' >"$scratch/empty.html"
echo "rows $got, page $(stat -c %s "$page") bytes ($(( $(stat -c %s "$page") / 1024 )) KiB)"

open_page() {   # label, file: Chromium's wall time to the loaded DOM, and the page's ready time
	local label=$1 file=$2 t0 t1 dom ms load
	t0=$(date +%s%N)
	dom=$("$browser" --headless --no-sandbox --disable-gpu --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$scratch/profile" --dump-dom "file://$file" 2>/dev/null)
	t1=$(date +%s%N)
	ms=$(grep -o 'data-ready-ms="[0-9]*"' <<<"$dom" | grep -o '[0-9]*' || echo "-")
	load=$(grep -o 'data-load-ms="[0-9]*"' <<<"$dom" | grep -o '[0-9]*' || echo "-")
	grep -q 'data-ready="1"' <<<"$dom" || ms="not ready"
	echo "$label chromium wall $(( (t1 - t0) / 1000000 )) ms (to the dumped DOM), page drawn" \
		"at $ms ms, load event at $load ms after navigation"
}
open_page "warm-up" "$scratch/empty.html" >/dev/null
for r in $(seq "$rounds"); do
	open_page "empty" "$scratch/empty.html"
	open_page "report" "$page"
done
