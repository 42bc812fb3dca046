#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the bench/RESULTS.md scaling matrix: streams 1, 2, 4, 8, 16 x workers 1, 2 for the
# transformer, tiny and huge profiles, each cell with its ceiling measured in the same
# invocation (disk-limit for the large profiles, create-limit and ring-limit for tiny).
# Appends one JSON object per run, with the command that produced it, to OUT.jsonl.
# Sizes are cut with --total so the whole matrix takes a few minutes on a 2-core machine.
#
# -f adds fio (the disk's ceiling: fio buffered and O_DIRECT on the capture's bytes) to every
# run's baselines, for `bench/plot.sh fio`; -w sets the worker counts, -T every profile's size.
#
#   bench/run_matrix.sh [-a ADUMP] [-d SCRATCH_DIR] [-o bench/matrix.jsonl] [-p "transformer tiny huge"]
#                       [-s "1 2 4 8 16"] [-w "1 2"] [-T SIZE] [-f]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
adump=${ADUMP:-$here/../build-bench/tools/adump}
scratch=${TMPDIR:-/tmp}/adump-matrix.$$
out=$here/matrix.jsonl
profiles="transformer tiny huge"
streams_list="1 2 4 8 16"
workers_list="1 2"

size=""
extra=""
while getopts "a:d:o:p:s:w:T:f" opt; do
	case $opt in
	a) adump=$OPTARG ;;
	d) scratch=$OPTARG ;;
	o) out=$OPTARG ;;
	p) profiles=$OPTARG ;;
	s) streams_list=$OPTARG ;;
	w) workers_list=$OPTARG ;;
	T) size=$OPTARG ;;
	f) extra=,fio ;;
	*) echo "usage: $0 [-a ADUMP] [-d SCRATCH_DIR] [-o OUT.jsonl] [-p PROFILES] [-s STREAMS] [-w WORKERS] [-T SIZE] [-f]" >&2; exit 2 ;;
	esac
done
[[ -x $adump ]] || { echo "run_matrix: $adump is not built (cmake --build build-bench)" >&2; exit 1; }

# Per profile: the bytes to capture and the baselines that bound it.
declare -A total=([transformer]=768M [tiny]=8M [huge]=1536M)
declare -A baselines=([transformer]=disk$extra [tiny]=create,ring$extra [huge]=disk$extra)
if [[ -n $size ]]; then
	for p in "${!total[@]}"; do total[$p]=$size; done
fi

mkdir -p "$scratch"
: >"$out"
# Small files are deleted only at the end: ext4 refuses recently freed inodes for a while,
# which makes file creation right after a mass delete many times slower (machine-limits §2).
deferred=()
cleanup() { rm -rf "$scratch"; }
trap cleanup EXIT

start=$(date +%s)
for profile in $profiles; do
	for streams in $streams_list; do
		for workers in $workers_list; do
			# The pipeline never runs more workers than streams.
			((workers > streams)) && continue
			dir=$scratch/$profile-s$streams-w$workers
			cmd="adump bench --profile $profile --streams $streams --workers $workers --total ${total[$profile]} --baselines ${baselines[$profile]} --json --out DIR"
			echo "run_matrix: $cmd" >&2
			line=$("$adump" bench --profile "$profile" --streams "$streams" --workers "$workers" \
				--total "${total[$profile]}" --baselines "${baselines[$profile]}" --json \
				--out "$dir" | tail -n 1) || echo "run_matrix: exit status $? (kept)" >&2
			printf '{"cmd":"%s",%s\n' "$cmd" "${line#\{}" >>"$out"
			if [[ $profile == tiny ]]; then
				deferred+=("$dir")
			else
				rm -rf "$dir"
			fi
		done
	done
done
rm -rf "${deferred[@]}"
echo "run_matrix: $(wc -l <"$out") runs in $(($(date +%s) - start)) s -> $out" >&2
