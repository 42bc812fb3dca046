#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Build adump if needed, then run the four samples in order, each in a fresh directory with
# its acl.json, as CANN's run.sh does. Prints [SUCCESS] per sample; exits non-zero on the
# first failure. BUILD_DIR (default <repo>/build) picks the build tree.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
build=${BUILD_DIR:-$repo/build}
samples=(0_adump_args 1_adump_callback 2_model_dump_config 3_save_exception_info)

need_build=0
for s in "${samples[@]}"; do
	[[ -x "$build/examples/example_$s" ]] || need_build=1
done
if (( need_build )); then
	cmake -S "$repo" -B "$build" -DADUMP_BUILD_EXAMPLES=ON
	cmake --build "$build" -j"$(nproc)" --target \
		$(printf 'example_%s ' "${samples[@]}")
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/adump-examples.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Exception dump paths come from the environment first; keep the samples self-contained.
unset ASCEND_DUMP_PATH ASCEND_WORK_PATH ASCEND_DUMP_SCENE NPU_COLLECT_PATH

for s in "${samples[@]}"; do
	mkdir -p "$work/$s"
	cp "$here/$s/acl.json" "$work/$s/"
	if (cd "$work/$s" && "$build/examples/example_$s" > output_msg.txt 2>&1); then
		echo "[SUCCESS] $s"
	else
		echo "[FAILED] $s; its output:"
		cat "$work/$s/output_msg.txt"
		exit 1
	fi
done
