#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Build the libFuzzer targets (dump parser, LZ4 source, packed indexes, chunk assembler, .pt
# reader, msprobe's dump.json, acl.json parser, acldumpSaveExceptionInfo arguments) with
# clang + ASan/UBSan in their own build directory, write the seed corpus, and run each fuzzer
# for SECONDS (default 30).
# Usage: tests/fuzz/run.sh [SECONDS]    (ADUMP_FUZZ_BUILD overrides the build directory)
set -eu
seconds=${1:-30}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${ADUMP_FUZZ_BUILD:-$root/build-fuzz}

cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	-DADUMP_BUILD_FUZZ=ON -DADUMP_SANITIZE=address -DADUMP_BUILD_BENCH=OFF \
	-DADUMP_BUILD_EXAMPLES=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target fuzz_reader fuzz_lz4 fuzz_packed fuzz_asm \
	fuzz_acl_config fuzz_acl_exception fuzz_pt fuzz_msprobe fuzz_seeds

corpus=$build/fuzz-corpus
artifacts=$build/fuzz-artifacts
# fuzz_acl_exception writes dump files; they go here, removed after the run.
scratch=$build/fuzz-tmp
rm -rf "$scratch"
mkdir -p "$artifacts" "$scratch"
"$build/tests/fuzz/fuzz_seeds" "$corpus"
for target in reader lz4 packed asm acl_config acl_exception pt msprobe; do
	echo "fuzz_$target: ${seconds}s on $corpus/$target"
	dict=
	if [ -f "$root/tests/fuzz/$target.dict" ]; then
		dict=-dict=$root/tests/fuzz/$target.dict
	fi
	# New inputs go to the corpus directory; a crash leaves its input in $artifacts and
	# makes this script fail.
	TMPDIR=$scratch "$build/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -max_len=65536 \
		-rss_limit_mb=2048 -timeout=10 -print_final_stats=1 ${dict:+"$dict"} \
		-artifact_prefix="$artifacts/$target-" "$corpus/$target"
done
rm -rf "$scratch"
echo "fuzz: all targets ran ${seconds}s without a failure"
