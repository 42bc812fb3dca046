#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages adump needs to build, test and benchmark, skipping the
# package index update when everything is already there. Run as root (or with sudo).
set -euo pipefail

packages=(
	build-essential cmake pkg-config git
	liburing-dev libck-dev libprotobuf-c-dev protobuf-c-compiler liblz4-dev lz4
	check libjson-c-dev libisal-dev libseccomp-dev libdouble-conversion-dev
	clang libclang-rt-14-dev
	python3 python3-dev python3-numpy python3-torch python3-torchvision
	python3-setuptools python3-wheel python3-venv python3-pip
	gnuplot-nox fio
	libjs-chart.js chromium firefox-esr
)

missing=()
for p in "${packages[@]}"; do
	[[ $p == \#* ]] && continue
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done

if ((${#missing[@]})); then
	echo "setup: installing ${missing[*]}"
	SUDO=""
	[[ $(id -u) -ne 0 ]] && SUDO="sudo"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
	echo "setup: all packages present"
fi
