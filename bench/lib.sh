# shellcheck shell=bash
# SPDX-License-Identifier: Apache-2.0
# What bench/headline.sh and bench/ceiling.sh share: one run of their table of "id|arguments"
# entries. Sourced, not run. The caller sets tag (the message prefix), adump, scratch, out and
# only (its -r list; "" for every run).
# shellcheck disable=SC2154

# bench_selected ENTRY: whether -r left the entry in.
bench_selected() {
	[[ -z $only || " $only " == *" ${1%%|*} "* ]]
}

# bench_run ENTRY [ROUND]: `$adump bench ARGUMENTS --json --out $scratch/ID[-ROUND]`. Its last
# line, the JSON report, is appended to $out with the id, the round (when given) and the
# command in front, also when the run failed (said on stderr). Sets bench_id and bench_dir,
# the run's output directory, for the caller to remove.
bench_run() {
	local args=${1#*|} round=${2:-} line

	bench_id=${1%%|*}
	bench_dir=$scratch/$bench_id${round:+-$round}
	echo "$tag: ${round:+round $round: }$bench_id: adump bench $args --json --out DIR" >&2
	# shellcheck disable=SC2086
	line=$("$adump" bench $args --json --out "$bench_dir" | tail -n 1) ||
		echo "$tag: $bench_id exit status $?${round:+ (kept)}" >&2
	printf '{"id":"%s",%s"cmd":"adump bench %s --json --out DIR",%s\n' "$bench_id" \
		"${round:+\"round\":$round,}" "$args" "${line#\{}" >>"$out"
}
