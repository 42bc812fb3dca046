#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Issue 12's check as written: fio on the same filesystem, alternated with `adump bench` in its
# default mode, each timed until synced, best of three. Each round runs the capture (its
# --json report: bytes, seconds until synced), then fio O_DIRECT and fio buffered on the same
# byte count in the same directory, each from a synced start: `adump bench --fio-only`, which
# runs fio exactly as the bench's own fio baselines do (1 MiB io_uring writes at depth 16, or
# psync where io_uring is refused; fio's write time from its JSON report plus a timed
# syncfs). The order within a round rotates, so no side always runs first after the previous
# one's flush. Prints every run with its CPU seconds per GB, and the best of each side.
#
# Issue 23's check: -w uring,pwrite runs the capture once per writer in each round (the
# capture's --writer), and --fio-engine psync --fio-jobs N runs fio as N psync jobs (N = the
# pwrite writer's threads: workers x its I/O threads).
#
#   bench/alternate.py [-a ADUMP] [-d DIR] [-n ROUNDS] [-w W,...] [--fio-engine E]
#                      [--fio-jobs N] [-- BENCH ARGS...]
#   bench/alternate.py -n 3 -- --profile huge
#   bench/alternate.py -n 3 -w uring,pwrite --fio-engine psync --fio-jobs 8 -- --profile huge
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
    return r["bytes"], r["seconds"], r["seconds_unsynced"], r.get("cpu_seconds", 0), r.get("backend")


def fio(adump, directory, nbytes, direct, fio_args):
    # fio as the bench's own fio baselines run it: `adump bench --fio-only` (bench/fio.c builds
    # fio's command line and times it), so this script keeps no fio arguments of its own.
    p = subprocess.run([adump, "bench", "--fio-only", "direct" if direct else "buffered",
                        "--total", str(nbytes), "--out", directory, "--json", *fio_args],
                       stdout=subprocess.PIPE, text=True)
    if p.returncode:
        sys.exit(f"alternate: adump bench --fio-only failed (exit {p.returncode})")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    return r["bytes"], r["seconds"], r["seconds_unsynced"], r.get("cpu_seconds", 0), \
        f"{r.get('engine', 'io_uring')} x{r.get('jobs', 1)}"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("-a", "--adump", default=os.path.join(here, "..", "build-bench", "tools", "adump"))
    ap.add_argument("-d", "--dir", default="/tmp/adump-alternate")
    ap.add_argument("-n", "--rounds", type=int, default=3)
    ap.add_argument("-w", "--writers", default="", help="comma-separated --writer values")
    ap.add_argument("--fio-engine", default="")
    ap.add_argument("--fio-jobs", default="")
    ap.add_argument("bench_args", nargs="*")
    o = ap.parse_args()
    if not shutil.which("fio"):
        sys.exit("alternate: fio is not installed (scripts/setup.sh)")
    os.makedirs(o.dir, exist_ok=True)
    writers = [w for w in o.writers.split(",") if w]
    captures = [f"adump-{w}" for w in writers] or ["adump"]
    fio_args = (["--fio-engine", o.fio_engine] if o.fio_engine else []) + \
        (["--fio-jobs", o.fio_jobs] if o.fio_jobs else [])
    best, cpu = {}, {}
    order = captures + ["fio-direct", "fio-buffered"]
    nbytes = None
    print(f"adump bench {' '.join(o.bench_args)}: {o.rounds} rounds, each side timed until synced")
    for rnd in range(o.rounds):
        k = rnd % len(order)
        # The first round starts with a capture: fio needs its byte count.
        for side in (order[k:] + order[:k]) if rnd else order:
            synced(o.dir)
            if side.startswith("adump"):
                args = list(o.bench_args)
                if side != "adump":
                    args += ["--writer", side[len("adump-"):]]
                nbytes, sec, unsynced, cpu_s, how = capture(o.adump, args,
                                                            os.path.join(o.dir, "capture"))
                written = nbytes
            else:
                written, sec, unsynced, cpu_s, how = fio(o.adump, o.dir, nbytes,
                                                         side == "fio-direct", fio_args)
            gbps = written / sec / 1e9
            if gbps > best.get(side, 0):
                best[side] = gbps
                cpu[side] = cpu_s / (written / 1e9)
            print(f"  round {rnd + 1} {side:13s} {written / 1e9:6.2f} GB {sec:7.3f} s "
                  f"(writes {unsynced:6.3f} s) {gbps:6.3f} GB/s {cpu_s / (written / 1e9):6.2f} "
                  f"CPU s/GB ({how})", flush=True)
    ceiling = max(best.get("fio-direct", 0), best.get("fio-buffered", 0))
    print(f"best of {o.rounds}: " + ", ".join(
        f"{side} {best[side]:.3f} GB/s ({cpu[side]:.2f} CPU s/GB)" for side in order))
    for side in captures:
        line = f"{side} / faster fio = {best[side] / ceiling:.2f}"
        if side != "adump-uring" and "adump-uring" in best:
            line += f", / adump-uring = {best[side] / best['adump-uring']:.2f}"
        print(line)
    shutil.rmtree(o.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
