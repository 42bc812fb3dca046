#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Turns bench/matrix.jsonl (from run_matrix.sh) into bench/scaling.svg with gnuplot (Debian:
# gnuplot-nox, installed by scripts/setup.sh; PLOT_PNG=1 also writes a .png): capture
# throughput against streams for 1 and 2 workers, per profile, next to the ceiling measured
# in the same runs.
#
#   bench/plot.sh [bench/matrix.jsonl] [bench/scaling.svg]
#
# The fio mode draws, from bench JSON lines (one `adump bench --json` object a line, as
# run_matrix.sh -f writes them, or the last lines of any runs with --baselines fio or
# --compare), the capture's GB/s next to fio buffered's and fio O_DIRECT's for each profile
# and stream count: one panel per profile, bars per stream count, the best of the runs of a
# cell. It writes OUT.svg and OUT.png. TITLE (environment; gnuplot enhanced text, so no ~ _ ^)
# is added to the plot's title.
#
#   bench/plot.sh fio [bench/fio.jsonl] [bench/fio]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)

if [[ ${1:-} == fio ]]; then
	in=${2:-$here/fio.jsonl}
	base=${3:-$here/fio}
	base=${base%.svg}
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	# One data file per profile: streams, capture, fio buffered, fio direct (GB/s, "nan" if
	# absent), best of the runs of that profile and stream count.
	profiles=$(/usr/bin/python3 - "$in" "$tmp" <<'EOF'
import json, sys
nan = float("nan")
cells = {}
for line in open(sys.argv[1]):
    line = line.strip()
    if not line.startswith("{"):
        continue
    r = json.loads(line)
    b = r.get("baselines", {})
    # Only runs held against fio (ceiling.sh also has paced and tiny runs without it).
    if "fio_buffered" not in b and "fio_direct" not in b:
        continue
    def gbps(k):
        v = b.get(k)
        return v["gbps"] if v and v.get("error") == 0 else nan
    new = (r["gbps"], gbps("fio_buffered"), gbps("fio_direct"))
    old = cells.setdefault(r["profile"], {}).get(r["streams"], (nan, nan, nan))
    cells[r["profile"]][r["streams"]] = tuple(
        n if o != o or n > o else o for n, o in zip(new, old))
for p, by_s in cells.items():
    with open(f"{sys.argv[2]}/{p}.dat", "w") as f:
        for s in sorted(by_s):
            f.write(f"{s} " + " ".join(f"{v:.4f}" for v in by_s[s]) + "\n")
print(" ".join(p for p in ("range", "transformer", "huge", "tiny") if p in cells))
EOF
)
	[[ -n $profiles ]] || { echo "plot: no bench JSON lines in $in" >&2; exit 1; }
	count=$(wc -w <<<"$profiles")
	for term in svg png; do
		if [[ $term == svg ]]; then
			setterm="set terminal svg size $((420 * count + 80)),500 dynamic enhanced font \"sans,11\""
		else
			setterm="set terminal pngcairo size $((420 * count + 80)),500 enhanced font \"sans,10\""
		fi
		gnuplot <<EOF
$setterm
set output "$base.$term"
set multiplot layout 1,$count title "adump bench: the capture next to fio (the disk's ceiling) in the same runs, best per cell${TITLE:+\\n$TITLE}"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key below font ",9"
set grid ytics
set yrange [0:*]
set xlabel "streams"
set ylabel "GB/s (until synced)"
set datafile missing "nan"
do for [p in "$profiles"] {
  set title p
  plot "$tmp/".p.".dat" using 2:xtic(1) title "adump capture" lc rgb "#1f77b4", \
       "" using 3 title "fio buffered io\\\\_uring" lc rgb "#aaaaaa", \
       "" using 4 title "fio O\\\\_DIRECT" lc rgb "#555555"
}
unset multiplot
EOF
		echo "plot: $base.$term"
	done
	exit 0
fi
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
