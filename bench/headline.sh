#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The runs behind the headline ratios of bench/RESULTS.md, one per issue-5 target, each with
# its baselines measured in the same invocation. Appends one JSON object per run (with its
# id and command) to OUT.jsonl. Five to fifteen minutes on the 2-core machine.
#
#   bench/headline.sh [-a ADUMP] [-d SCRATCH_DIR] [-o /tmp/adump-headline.jsonl] [-r "ids"]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
tag=headline
adump=${ADUMP:-$here/../build-bench/tools/adump}
scratch=${TMPDIR:-/tmp}/adump-headline.$$
out=${TMPDIR:-/tmp}/adump-headline.jsonl
only=""

while getopts "a:d:o:r:" opt; do
	case $opt in
	a) adump=$OPTARG ;;
	d) scratch=$OPTARG ;;
	o) out=$OPTARG ;;
	r) only=$OPTARG ;;
	*) echo "usage: $0 [-a ADUMP] [-d SCRATCH_DIR] [-o OUT.jsonl] [-r IDS]" >&2; exit 2 ;;
	esac
done
[[ -x $adump ]] || { echo "headline: $adump is not built" >&2; exit 1; }
mkdir -p "$scratch"
trap 'rm -rf "$scratch"' EXIT
[[ -n $only ]] || : >"$out"

# id | arguments (the output directory is appended)
runs=(
	"large|--streams 4 --min-size 1M --max-size 64M --total 2G --baselines disk,naive,nodump"
	"large-direct|--streams 4 --min-size 1M --max-size 64M --total 2G --io direct --baselines disk-direct,disk"
	"overhead|--profile transformer --streams 4 --total 2G --compute-gbps auto --baselines disk,naive,nodump"
	"overhead-1stream|--profile transformer --streams 1 --total 1G --compute-gbps auto --baselines disk,naive,nodump"
	"tiny-file|--profile tiny --streams 4 --total 16M --baselines create,naive,ring"
	"tiny-packed|--profile tiny --streams 4 --total 16M --sink packed --baselines naive,ring"
	"tiny-callback|--profile tiny --streams 4 --total 16M --sink callback --baselines ring"
	"tiny-packed-128M|--profile tiny --streams 4 --total 128M --sink packed --baselines ring"
	"tiny-callback-128M|--profile tiny --streams 4 --total 128M --sink callback --baselines ring"
	"lz4-relu|--streams 4 --min-size 1M --max-size 64M --total 2G --data relu --compress lz4 --baselines disk"
	"rss-1G|--streams 4 --min-size 1M --max-size 64M --total 1G --sink callback"
	"rss-16G|--streams 4 --min-size 1M --max-size 64M --total 16G --sink callback"
	"rss-file-4G|--streams 4 --min-size 1M --max-size 64M --total 4G --baselines disk"
)

for entry in "${runs[@]}"; do
	bench_selected "$entry" || continue
	bench_run "$entry"
	rm -rf "$bench_dir"
done
echo "headline: $(wc -l <"$out") runs -> $out" >&2
