#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every test: install what is missing, then build and run the whole suite four times: plain,
# plain again with io_uring refused as in a container (nouring), with AddressSanitizer +
# UndefinedBehaviorSanitizer and with ThreadSanitizer; then the examples and a short
# libFuzzer run. Exits non-zero if anything fails.
#   scripts/test.sh [plain|nouring|asan|tsan|fuzz ...]   (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
jobs=$(nproc)
stages=("$@")
((${#stages[@]})) || stages=(plain nouring asan tsan fuzz)

build() {
	local dir=$1; shift
	cmake -S . -B "$dir" -DADUMP_WERROR=ON -DADUMP_SKIP= "$@" >/dev/null
	cmake --build "$dir" -j"$jobs"
}

build_and_test() {
	build "$@"
	(cd "$1" && ctest --output-on-failure -j"$jobs" --timeout 900)
}

start=$SECONDS
for stage in "${stages[@]}"; do
	echo "== $stage (at $((SECONDS - start)) s)"
	case $stage in
	plain)
		build_and_test build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo
		if [[ -x examples/run.sh ]]; then
			BUILD_DIR="$PWD/build-test" examples/run.sh
		fi
		;;
	nouring)
		# The plain build again (built already when the plain stage ran), every test run
		# under a seccomp filter that refuses io_uring with EPERM, as Docker's and
		# containerd's default profiles do: AUTO sessions, the adump command and fio take
		# their fallbacks; tests that need io_uring itself skip (77).
		build build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo
		(cd build-test && tests/nouring/adump_no_uring ctest --output-on-failure -j"$jobs" --timeout 900)
		;;
	asan)
		# Sanitizer builds run the stress and capture tests smaller: they are 10-50x slower.
		ADUMP_TEST_RING_RECORDS=300000 ADUMP_TEST_MAX_BYTES=2097152 \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
			build_and_test build-asan -DCMAKE_BUILD_TYPE=Debug -DADUMP_SANITIZE=address
		;;
	tsan)
		ADUMP_TEST_RING_RECORDS=300000 ADUMP_TEST_MAX_BYTES=1048576 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
			build_and_test build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DADUMP_SANITIZE=thread
		;;
	fuzz)
		if [[ -x tests/fuzz/run.sh ]]; then
			tests/fuzz/run.sh 30
		else
			echo "no fuzz targets"
		fi
		;;
	*)
		echo "unknown stage $stage" >&2
		exit 2
		;;
	esac
done
echo "scripts/test.sh: all stages passed (${stages[*]}) in $((SECONDS - start)) s"
