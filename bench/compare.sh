#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `adump compare` at disk speed: two captures of the same bench workload (same seed), the
# second perturbed everywhere (every element's lowest bit) and at known places (the output of
# the op at 40% of the op order and of every 10th op after it: the upper half of each output
# has its sign bit flipped), compared
#   - from the page cache and from a cold cache (drop_caches; needs root, else skipped),
#   - against `cat` of both trees to /dev/null in the same sitting (the read limit),
#   - against msaccucmp when MSACCUCMP="python3 /path/msaccucmp.py" is given,
# runs alternated. Checks that the first divergent op is the first perturbed one. Prints one
# line per run; deletes the dumps at the end (KEEP=1 keeps them).
#
#   bench/compare.sh [-a ADUMP] [-d SCRATCH_DIR] [-s SIZE (default 2200M)] [-n ROUNDS (2)]
#                    [-p PLOT_DIR (keep the --plot pictures there)]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
adump=${ADUMP:-$here/../build/tools/adump}
scratch=${TMPDIR:-/tmp}/adump-compare.$$
size=2200M
rounds=2
plot_dir=""
while getopts "a:d:s:n:p:" opt; do
	case $opt in
	a) adump=$OPTARG ;;
	d) scratch=$OPTARG ;;
	s) size=$OPTARG ;;
	n) rounds=$OPTARG ;;
	p) plot_dir=$OPTARG ;;
	*) echo "usage: $0 [-a ADUMP] [-d SCRATCH_DIR] [-s SIZE] [-n ROUNDS]" >&2; exit 2 ;;
	esac
done
[[ -x $adump ]] || { echo "compare.sh: $adump is not built" >&2; exit 1; }
mkdir -p "$scratch"
trap '[[ -n ${KEEP:-} ]] || rm -rf "$scratch"' EXIT

workload=(--streams 2 --min-size 1M --max-size 64M --total "$size" --seed 11)
"$adump" bench "${workload[@]}" --out "$scratch/golden" >/dev/null
"$adump" bench "${workload[@]}" --out "$scratch/my" >/dev/null
golden=$(ls -d "$scratch"/golden/*/0)
my=$(ls -d "$scratch"/my/*/0)

# Perturb: ops in my side's timestamp order (msaccucmp's op order); every element of every
# tensor gets its lowest bit flipped (as an NPU run differs from its reference everywhere, so
# no op is the same bytes on both sides); then flip the sign bit of the upper half of the
# output's elements. The output is the file's last third (self, other, out
# have one shape). Element width from the name-independent header via adump inspect --json.
first=$(/usr/bin/python3 - "$my" "$adump" <<'EOF'
import json, os, struct, subprocess, sys
import numpy as np
d, adump = sys.argv[1], sys.argv[2]
files = sorted(os.listdir(d), key=lambda f: (int(f.rsplit('.', 1)[1]), f))
start = int(len(files) * 0.4)
for k, f in enumerate(files):
    p = os.path.join(d, f)
    info = json.loads(subprocess.check_output([adump, 'inspect', '--json', '--no-stats', p]))
    dt = json.dumps(info)
    width = 2 if 'float16' in dt.lower() else 4
    words = np.uint16 if width == 2 else np.uint32
    size = os.path.getsize(p)
    with open(p, 'r+b') as fh:
        hlen = struct.unpack('<Q', fh.read(8))[0]
        # Every element's lowest bit flipped: no tensor is the same bytes on both sides.
        fh.seek(8 + hlen)
        body = np.fromfile(fh, dtype=words, count=(size - 8 - hlen) // width)
        fh.seek(8 + hlen)
        fh.write((body ^ 1).tobytes())
    k -= start
    if k < 0 or k % 10:
        continue
    sign = 0x8000 if width == 2 else 0x80000000
    with open(p, 'r+b') as fh:
        third = (size - 8 - hlen) // 3
        off = 8 + hlen + 2 * third + third // 2 // width * width
        fh.seek(off)
        raw = np.frombuffer(fh.read(size - off), dtype=np.uint16 if width == 2 else np.uint32)
        fh.seek(off)
        fh.write((raw ^ sign).tobytes())
    if k == 0:
        print(f.split('.')[1])
EOF
)
echo "perturbed from op $first on; dumps $(du -sb "$golden" | cut -f1) + $(du -sb "$my" | cut -f1) bytes"

drop() {
	sync
	if [[ -w /proc/sys/vm/drop_caches ]]; then echo 3 >/proc/sys/vm/drop_caches; return 0; fi
	return 1
}
warm() { cat "$golden"/* "$my"/* >/dev/null; }
timed() {   # label, command...: one line with wall s, CPU s, peak RSS
	local label=$1; shift
	/usr/bin/time -f "$label wall %e s, user %U s, sys %S s, peak RSS %M KiB" "$@" \
		>/dev/null 2>"$scratch/time.err" || true
	tail -1 "$scratch/time.err"
}
bytes=$(du -sb "$golden" | cut -f1)
for r in $(seq "$rounds"); do
	warm
	timed "warm cat" sh -c "cat $golden/* $my/* >/dev/null"
	timed "warm adump-compare" "$adump" compare -m "$my" -g "$golden" -out "$scratch/out" --quiet
	if drop; then
		timed "cold cat" sh -c "cat $golden/* $my/* >/dev/null"
		drop
		timed "cold adump-compare" "$adump" compare -m "$my" -g "$golden" -out "$scratch/out" --quiet
	fi
	if [[ -n ${MSACCUCMP:-} ]]; then
		warm
		timed "warm msaccucmp" $MSACCUCMP compare -m "$my" -g "$golden" -out "$scratch/mc"
	fi
done
echo "bytes per side: $bytes"
"$adump" compare -m "$my" -g "$golden" -out "$scratch/final" --quiet --json --plot >"$scratch/rows.json"
if [[ -n $plot_dir ]]; then
	mkdir -p "$plot_dir"
	cp "$scratch"/final/compare_*.png "$scratch"/final/compare_*.svg "$plot_dir"/
fi
found=$(/usr/bin/python3 -c '
import json, sys
for r in json.load(open(sys.argv[1])):
    c = r["CosineSimilarity"]
    try:
        if float(c) < 0.99:
            print(r["NPUDump"]); break
    except ValueError:
        pass' "$scratch/rows.json")
echo "first divergent op: $found (perturbed: $first) $([[ $found == "$first" ]] && echo OK || echo WRONG)"
