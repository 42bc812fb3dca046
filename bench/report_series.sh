#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `adump report` of a statistics capture at scale (issue 33 item 4): OPS ops (an input and an
# output each) over STEPS steps, written as a content=stats session writes them
# (step<N>/rank0/0/<dump name>.csv, the ALL statistics columns), then reported. Prints the
# points, the report's wall time and peak RSS (/usr/bin/time), the page's bytes, and the time
# the page's own script says it was drawn (data-ready-ms) in headless Chromium, ROUNDS times.
# Deletes the capture at the end (KEEP=1 keeps it).
#
#   bench/report_series.sh [-a ADUMP] [-d SCRATCH_DIR] [-o OPS (500)] [-s STEPS (100)] [-n ROUNDS (3)]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
adump=${ADUMP:-$here/../build/tools/adump}
scratch=${TMPDIR:-/tmp}/adump-report-series.$$
ops=500
steps=100
rounds=3
browser=${CHROMIUM:-/usr/bin/chromium}
while getopts "a:d:o:s:n:" opt; do
	case $opt in
	a) adump=$OPTARG ;;
	d) scratch=$OPTARG ;;
	o) ops=$OPTARG ;;
	s) steps=$OPTARG ;;
	n) rounds=$OPTARG ;;
	*) echo "usage: $0 [-a ADUMP] [-d SCRATCH_DIR] [-o OPS] [-s STEPS] [-n ROUNDS]" >&2; exit 2 ;;
	esac
done
[[ -x $adump ]] || { echo "report_series.sh: $adump is not built" >&2; exit 1; }
[[ -x $browser ]] || { echo "report_series.sh: $browser is missing (apt install chromium)" >&2; exit 1; }
mkdir -p "$scratch"
trap '[[ -n ${KEEP:-} ]] || rm -rf "$scratch"' EXIT

/usr/bin/python3 - "$scratch/cap" "$ops" "$steps" <<'PY'
import os, random, sys
top, ops, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
random.seed(1)
head = ("Input/Output,Index,Data Size,Data Type,Format,Shape,Count,Max Value,Min Value,"
        "Avg Value,Nan Count,Negative Inf Count,Positive Inf Count,l2norm")
for s in range(steps):
    d = os.path.join(top, "step%d" % s, "rank0", "0")
    os.makedirs(d)
    for o in range(ops):
        rows = [head]
        for io in ("Input", "Output"):
            v = 1 + 0.01 * s + random.random() * 0.1
            rows.append("%s,0,4096,DT_FLOAT,ND,32x32,1024,%g,%g,%g,0,0,0,%g"
                        % (io, v, -v, v / 10, v * 30))
        name = "MatMul.layer_%d.%d.1.%d.csv" % (o, o, 1700000000000000 + s * 100000 + o)
        with open(os.path.join(d, name), "w") as f:
            f.write("\n".join(rows) + "\n")
PY
page=$scratch/page.html
t=$( { /usr/bin/time -f "%e s, peak RSS %M KiB" "$adump" report --quiet -o "$page" "$scratch/cap"; } 2>&1 )
echo "points $(( ops * 2 * steps )) ($(( ops * 2 )) tensors x $steps steps), adump report $t," \
	"page $(stat -c %s "$page") bytes"
for r in $(seq "$rounds"); do
	dom=$("$browser" --headless --no-sandbox --disable-gpu --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$scratch/profile" --dump-dom "file://$page" 2>/dev/null)
	ms=$(grep -o 'data-ready-ms="[0-9]*"' <<<"$dom" | grep -o '[0-9]*' || echo "-")
	grep -q 'data-ready="1"' <<<"$dom" || ms="not ready"
	echo "round $r: page drawn at $ms ms after navigation"
done
