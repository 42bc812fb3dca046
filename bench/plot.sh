#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Turns bench/matrix.jsonl (from run_matrix.sh) into bench/scaling.svg with gnuplot (Debian:
# gnuplot-nox, installed by scripts/setup.sh; PLOT_PNG=1 also writes a .png): capture
# throughput against streams for 1 and 2 workers, per profile, next to the ceiling measured
# in the same runs.
#
#   bench/plot.sh [bench/matrix.jsonl] [bench/scaling.svg]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
in=${1:-$here/matrix.jsonl}
svg=${2:-$here/scaling.svg}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One data file per profile: streams, then workers 1 and 2 (value, ceiling), "NaN" if absent.
# Large profiles plot GB/s against disk-limit; tiny plots thousands of files/s against
# create-limit.
python3 - "$in" "$tmp" <<'EOF'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    line = line.strip()
    if not line:
        continue
    r = json.loads(line)
    p = r["profile"]
    b = r.get("baselines", {})
    if p == "tiny":
        v = r["files_per_s"] / 1e3
        c = b.get("create_limit", {}).get("files_per_s", float("nan")) / 1e3
    else:
        v = r["gbps"]
        c = b.get("disk_limit", {}).get("gbps", float("nan"))
    w = 1 if "-workers 1 " in r["cmd"] else 2
    rows.setdefault(p, {}).setdefault(r["streams"], {})[w] = (v, c)
for p, by_s in rows.items():
    with open(f"{sys.argv[2]}/{p}.dat", "w") as f:
        for s in sorted(by_s):
            cells = []
            for w in (1, 2):
                v, c = by_s[s].get(w, (float("nan"), float("nan")))
                cells += [f"{v:.4f}", f"{c:.4f}"]
            f.write(f"{s} " + " ".join(cells) + "\n")
EOF

for term in svg ${PLOT_PNG:+png}; do
	if [[ $term == svg ]]; then
		setterm='set terminal svg size 1200,480 dynamic enhanced font "sans,11"'
		target=$svg
	else
		setterm='set terminal pngcairo size 1200,480 enhanced font "sans,10"'
		target=${svg%.svg}.png
	fi
gnuplot <<EOF
$setterm
set output "$target"
set multiplot layout 1,3 title "adump bench: capture vs the ceiling measured in the same run (bench/RESULTS.md)"
set logscale x 2
set xrange [0.8:20]
set xtics (1, 2, 4, 8, 16)
set xlabel "streams"
set key below font ",9"
set grid
set style data linespoints
set datafile missing "nan"
do for [p in "transformer huge tiny"] {
  f = "$tmp/".p.".dat"
  if (p eq "tiny") { set ylabel "thousand files/s"; lim = "create-limit" } else { set ylabel "GB/s"; lim = "disk-limit" }
  set title p
  set yrange [0:*]
  if (system("test -s ".f." && echo 1") eq "1") {
    plot f using 1:2 title "adump, 1 worker" lw 2 pt 7, \
         f using 1:4 title "adump, 2 workers" lw 2 pt 5, \
         f using 1:3 title lim." (run w1)" dt 2 pt 6, \
         f using 1:5 title lim." (run w2)" dt 2 pt 4
  } else {
    set label 1 "no data" at graph 0.5, graph 0.5 center
    plot 2 notitle lc rgb "white"
    unset label 1
  }
}
unset multiplot
EOF
echo "plot: $target"
done
