#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Markdown tables for bench/RESULTS.md from the JSON lines of run_matrix.sh and headline.sh.
#   bench/summarize.py matrix bench/matrix.jsonl
#   bench/summarize.py headline bench/headline.jsonl
import json
import sys


def load(path):
    rows = []
    for line in open(path):
        line = line.strip()
        if line:
            rows.append(json.loads(line))
    return rows


def base(r, name, key, default=float("nan")):
    return r.get("baselines", {}).get(name, {}).get(key, default)


def matrix(rows):
    for profile in ("transformer", "tiny", "huge"):
        sel = [r for r in rows if r["profile"] == profile]
        if not sel:
            continue
        print(f"\n#### {profile}: `{sel[0]['cmd']}`\n")
        if profile == "tiny":
            print("| streams | workers | files | seconds | files/s | tensors/s | create-limit files/s | x create-limit | records/s | ring-limit records/s | x ring-limit | CPU s | producer wait p99 µs | enqueue p99 µs |")
            print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
            for r in sel:
                print(f"| {r['streams']} | {r['workers']} | {r['files']} | {r['seconds']:.3f} | {r['files_per_s']:.0f} | {r['tensors_per_s']:.0f} | "
                      f"{base(r, 'create_limit', 'files_per_s'):.0f} | {base(r, 'create_limit', 'ratio'):.2f} | "
                      f"{r['records_per_s']:.0f} | {base(r, 'ring_limit', 'records_per_s'):.0f} | {base(r, 'ring_limit', 'ratio'):.4f} | "
                      f"{r['cpu_seconds']:.2f} | {r['producer_wait_p99_us']:.0f} | {r['enqueue_p99_us']:.2f} |")
        else:
            print("| streams | workers | files | GB | seconds | GB/s | disk-limit GB/s | x disk-limit | CPU s/GB | peak RSS MiB (host) | producer wait p99 µs | enqueue p99 µs |")
            print("|---|---|---|---|---|---|---|---|---|---|---|---|")
            for r in sel:
                print(f"| {r['streams']} | {r['workers']} | {r['files']} | {r['bytes'] / 1e9:.2f} | {r['seconds']:.3f} | {r['gbps']:.3f} | "
                      f"{base(r, 'disk_limit', 'gbps'):.3f} | {base(r, 'disk_limit', 'ratio'):.2f} | {r['cpu_seconds_per_gb']:.2f} | "
                      f"{r['peak_rss_bytes'] / 2**20:.0f} ({r['host_rss_bytes'] / 2**20:.0f}) | {r['producer_wait_p99_us']:.0f} | {r['enqueue_p99_us']:.2f} |")


def headline(rows):
    print("| id | files | GB | seconds | GB/s | files/s | tensors/s | CPU s/GB | host RSS MiB | baselines (rate; capture x faster) | overhead adump / naive |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        parts = []
        for name, b in r.get("baselines", {}).items():
            if b.get("error"):
                parts.append(f"{name}: error {b['error']}")
                continue
            if name.startswith("disk"):
                rate = f"{b['gbps']:.3f} GB/s"
            elif name == "ring_limit":
                rate = f"{b['records_per_s'] / 1e6:.2f} M rec/s"
                # The pipeline's own channel on the same records, as a fraction of the bare
                # pair (runs before it was measured have no such fields).
                if b.get("chan_ratio") is not None:
                    rate += f" (chan hand-off {b['chan_records_per_s'] / 1e6:.2f} M rec/s = {b['chan_ratio']:.2f} of ring-limit)"
                elif "chan_error" in b:
                    rate += f" (chan hand-off: error {b['chan_error']})"
            elif name == "nodump":
                rate = f"{b['seconds']:.3f} s"
            else:
                rate = f"{b['files_per_s']:.0f} files/s, {b['cpu_seconds_per_gb']:.2f} CPU s/GB"
            parts.append(f"{name}: {rate}; x{b['ratio']:.2f}")
        ov = r.get("overhead", {})
        ovs = ""
        if ov and ov.get("adump") is not None:
            ovs = f"{100 * ov['adump']:+.1f} % / " + (f"{100 * ov['naive']:+.1f} %" if ov.get("naive") is not None else "-")
        gb = r["bytes"] / 1e9
        print(f"| {r['id']} | {r['files']} | {gb:.2f} | {r['seconds']:.3f} | {r['gbps']:.3f} | {r['files_per_s']:.0f} | "
              f"{r['tensors_per_s']:.0f} | {r['cpu_seconds_per_gb']:.2f} | {r['host_rss_bytes'] / 2**20:.0f} | {'<br>'.join(parts)} | {ovs} |")
    print()
    for r in rows:
        print(f"- `{r['id']}`: `{r['cmd']}`")


if __name__ == "__main__":
    rows = load(sys.argv[2])
    (matrix if sys.argv[1] == "matrix" else headline)(rows)
