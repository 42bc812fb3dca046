#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The runs behind issue 12's targets, in one sitting: the default capture (io auto) against fio
# on the same directory, the transformer step's overhead, tiny files against create-limit,
# the packed sink's tensors/s and host RSS (in every run). ROUNDS rounds (default 3); within a
# round every run goes once, so the runs of one target are spread over the sitting, and each
# run measures its own baselines (fio buffered and O_DIRECT run right after the capture, on
# the same bytes). Appends one JSON object per run, with its id, round and command, to
# OUT.jsonl; `bench/summarize.py ceiling OUT.jsonl` prints the tables and the best of the
# rounds, `bench/plot.sh fio OUT.jsonl bench/fio` the plot. 25-35 minutes on this machine.
#
#   bench/ceiling.sh [-a ADUMP] [-d SCRATCH_DIR] [-o /tmp/adump-ceiling.jsonl] [-n ROUNDS]
#                    [-r "ids"]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
tag=ceiling
adump=${ADUMP:-$here/../build-bench/tools/adump}
scratch=${TMPDIR:-/tmp}/adump-ceiling.$$
out=${TMPDIR:-/tmp}/adump-ceiling.jsonl
rounds=3
only=""

while getopts "a:d:o:n:r:" opt; do
	case $opt in
	a) adump=$OPTARG ;;
	d) scratch=$OPTARG ;;
	o) out=$OPTARG ;;
	n) rounds=$OPTARG ;;
	r) only=$OPTARG ;;
	*) echo "usage: $0 [-a ADUMP] [-d SCRATCH_DIR] [-o OUT.jsonl] [-n ROUNDS] [-r IDS]" >&2; exit 2 ;;
	esac
done
[[ -x $adump ]] || { echo "ceiling: $adump is not built (cmake --build build-bench)" >&2; exit 1; }
command -v fio >/dev/null || { echo "ceiling: fio is not installed (scripts/setup.sh)" >&2; exit 1; }
mkdir -p "$scratch"
: >"$out"
# Directories of many small files are deleted only at the end: ext4 without a journal skips
# inodes freed in the last 60 s (360 s while their table block is dirty), and creating files
# right after a mass delete runs several times slower (bench/RESULTS.md, tiny files).
deferred=()
trap 'rm -rf "$scratch"' EXIT

# id | arguments (the output directory is appended). The demo's range workload is that of
# scripts/demo.sh; huge and range also at 1 and 2 streams, for the plot.
runs=(
	"huge-s1|--profile huge --streams 1 --baselines fio"
	"huge-s2|--profile huge --streams 2 --baselines fio"
	"huge|--profile huge --baselines fio"
	"range-s1|--streams 1 --ops 800 --min-size 1K --max-size 4M --baselines fio"
	"range-s2|--streams 2 --ops 400 --min-size 1K --max-size 4M --baselines fio"
	"range|--streams 4 --ops 200 --min-size 1K --max-size 4M --baselines fio"
	"transformer|--profile transformer --streams 4 --compute-gbps auto --baselines nodump"
	"tiny-file|--profile tiny --streams 4 --total 16M --baselines create,publish"
	"tiny-packed|--profile tiny --streams 4 --total 128M --sink packed"
)

start=$(date +%s)
for ((round = 1; round <= rounds; round++)); do
	for entry in "${runs[@]}"; do
		bench_selected "$entry" || continue
		bench_run "$entry" "$round"
		case $bench_id in
		huge* | transformer) rm -rf "$bench_dir" ;;
		*) deferred+=("$bench_dir") ;;
		esac
	done
done
rm -rf "${deferred[@]}"
echo "ceiling: $(wc -l <"$out") runs in $(($(date +%s) - start)) s -> $out" >&2
