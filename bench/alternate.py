#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Issue 12's check as written: fio on the same filesystem, alternated with `adump bench` in its
# default mode, each timed until synced, best of three. Each round runs the capture (its
# --json report: bytes, seconds until synced), then fio O_DIRECT and fio buffered on the same
# byte count in the same directory, each from a synced start: `adump bench --fio-only`, which
# runs fio exactly as the bench's own fio baselines do (1 MiB io_uring writes at depth 16;
# fio's write time from its JSON report plus a timed syncfs). The order within a round
# rotates, so no side always runs first after the previous one's flush. Prints every run and
# the best of each side.
#
#   bench/alternate.py [-a ADUMP] [-d DIR] [-n ROUNDS] [-- BENCH ARGS...]
#   bench/alternate.py -n 3 -- --profile huge
import argparse
import json
import os
import shutil
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))


def synced(path):
    subprocess.run(["sync", "-f", path], check=True)


def capture(adump, args, out):
    p = subprocess.run([adump, "bench", *args, "--json", "--out", out],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    r = json.loads(p.stdout.strip().splitlines()[-1])
    if r.get("error") or r.get("failed"):
        sys.exit(f"alternate: the capture failed: {r.get('error')}")
    shutil.rmtree(out)
    return r["bytes"], r["seconds"], r["seconds_unsynced"]


def fio(adump, directory, nbytes, direct):
    # fio as the bench's own fio baselines run it: `adump bench --fio-only` (bench/fio.c builds
    # fio's command line and times it), so this script keeps no fio arguments of its own.
    p = subprocess.run([adump, "bench", "--fio-only", "direct" if direct else "buffered",
                        "--total", str(nbytes), "--out", directory, "--json"],
                       stdout=subprocess.PIPE, text=True)
    if p.returncode:
        sys.exit(f"alternate: adump bench --fio-only failed (exit {p.returncode})")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    return r["bytes"], r["seconds"], r["seconds_unsynced"]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("-a", "--adump", default=os.path.join(here, "..", "build-bench", "tools", "adump"))
    ap.add_argument("-d", "--dir", default="/tmp/adump-alternate")
    ap.add_argument("-n", "--rounds", type=int, default=3)
    ap.add_argument("bench_args", nargs="*")
    o = ap.parse_args()
    if not shutil.which("fio"):
        sys.exit("alternate: fio is not installed (scripts/setup.sh)")
    os.makedirs(o.dir, exist_ok=True)
    best = {}
    order = ["adump", "fio-direct", "fio-buffered"]
    nbytes = None
    print(f"adump bench {' '.join(o.bench_args)}: {o.rounds} rounds, each side timed until synced")
    for rnd in range(o.rounds):
        for side in order[rnd % 3:] + order[:rnd % 3]:
            synced(o.dir)
            if side == "adump":
                nbytes, sec, unsynced = capture(o.adump, o.bench_args, os.path.join(o.dir, "capture"))
                written = nbytes
            elif nbytes is None:
                continue                    # fio needs the capture's byte count: first round only
            else:
                written, sec, unsynced = fio(o.adump, o.dir, nbytes, side == "fio-direct")
            gbps = written / sec / 1e9
            best[side] = max(best.get(side, 0), gbps)
            print(f"  round {rnd + 1} {side:13s} {written / 1e9:6.2f} GB {sec:7.3f} s "
                  f"(writes {unsynced:6.3f} s) {gbps:6.3f} GB/s")
    ceiling = max(best.get("fio-direct", 0), best.get("fio-buffered", 0))
    print(f"best of {o.rounds}: adump {best['adump']:.3f} GB/s, fio O_DIRECT "
          f"{best.get('fio-direct', 0):.3f}, fio buffered {best.get('fio-buffered', 0):.3f}: "
          f"adump / faster fio = {best['adump'] / ceiling:.2f}")
    shutil.rmtree(o.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
