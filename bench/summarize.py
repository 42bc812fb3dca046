#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Markdown tables for bench/RESULTS.md from the JSON lines of run_matrix.sh, headline.sh and
# ceiling.sh.
#   bench/summarize.py matrix bench/matrix.jsonl
#   bench/summarize.py headline bench/headline.jsonl
#   bench/summarize.py ceiling /tmp/adump-ceiling.jsonl
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


def ceiling(rows):
    """Every run of ceiling.sh, then per id the best of its rounds against the best fio."""
    print("| id | round | files (direct) | GB | seconds | GB/s | CPU s/GB | fio buffered GB/s (CPU s/GB) | fio O_DIRECT GB/s (CPU s/GB) | x ceiling | other | host RSS MiB (limit) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        fb = r.get("baselines", {}).get("fio_buffered")
        fd = r.get("baselines", {}).get("fio_direct")
        fio = lambda b: f"{b['gbps']:.3f} ({b['cpu_seconds_per_gb']:.2f})" if b and not b.get("error") else "-"
        c = r.get("ceiling")
        other = []
        ov = r.get("overhead") or {}
        if ov.get("adump") is not None:
            other.append(f"overhead {100 * ov['adump']:+.1f} % (kernels {100 * ov['adump_kernels']:+.1f} %)")
        cl = base(r, "create_limit", "files_per_s", None)
        if cl is not None:
            other.append(f"{r['files_per_s']:.0f} vs create-limit {cl:.0f} files/s = {base(r, 'create_limit', 'ratio'):.2f}x")
        pl = base(r, "publish_limit", "files_per_s", None)
        if pl is not None:
            other.append(f"publish-limit {pl:.0f} files/s = {base(r, 'publish_limit', 'ratio'):.2f}x")
        if r.get("sink") == "packed":
            other.append(f"{r['tensors_per_s'] / 1e6:.2f} M tensors/s")
        print(f"| {r['id']} | {r['round']} | {r['files']} ({r.get('files_direct', 0)}) | {r['bytes'] / 1e9:.2f} | {r['seconds']:.3f} | "
              f"{r['gbps']:.3f} | {r['cpu_seconds_per_gb']:.2f} | {fio(fb)} | {fio(fd)} | "
              f"{c['ratio'] if c else float('nan'):.2f} | {'; '.join(other)} | "
              f"{r['host_rss_bytes'] / 2**20:.0f} ({r['rss_limit_bytes'] / 2**20:.0f}) |")
    print()
    ids = list(dict.fromkeys(r["id"] for r in rows))
    for i in ids:
        sel = [r for r in rows if r["id"] == i]
        cmd = sel[0]["cmd"]
        if any(r.get("ceiling") for r in sel):
            best = max(sel, key=lambda r: r["gbps"])
            fios = [(b["gbps"], n, b) for r in sel for n in ("fio_buffered", "fio_direct")
                    for b in [r.get("baselines", {}).get(n)] if b and not b.get("error")]
            fbest = max(fios, key=lambda t: t[0])
            fbuf_cpu = min(b["cpu_seconds_per_gb"] for g, n, b in fios if n == "fio_buffered")
            print(f"- `{i}` ({len(sel)} runs, `{cmd}`): best capture {best['gbps']:.3f} GB/s "
                  f"({best['cpu_seconds_per_gb']:.2f} CPU s/GB), best fio {fbest[0]:.3f} GB/s "
                  f"({fbest[1]}): **{best['gbps'] / fbest[0]:.2f}x**; per run "
                  + ", ".join(f"{r['ceiling']['ratio']:.2f}" for r in sel if r.get("ceiling"))
                  + f"; CPU s/GB {min(r['cpu_seconds_per_gb'] for r in sel):.2f}-{max(r['cpu_seconds_per_gb'] for r in sel):.2f}"
                  f" against fio buffered's lowest {fbuf_cpu:.2f}")
        elif sel[0].get("overhead", {}).get("adump") is not None:
            print(f"- `{i}` ({len(sel)} runs, `{cmd}`): overhead "
                  + ", ".join(f"{100 * r['overhead']['adump']:+.1f} %" for r in sel)
                  + " (while the kernels ran: "
                  + ", ".join(f"{100 * r['overhead']['adump_kernels']:+.1f} %" for r in sel) + ")")
        elif base(sel[0], "create_limit", "ratio", None) is not None:
            print(f"- `{i}` ({len(sel)} runs, `{cmd}`): x create-limit "
                  + ", ".join(f"{base(r, 'create_limit', 'ratio'):.2f}" for r in sel)
                  + f"; best **{max(base(r, 'create_limit', 'ratio') for r in sel):.2f}x**"
                  + ("" if base(sel[0], "publish_limit", "ratio", None) is None else
                     "; x publish-limit " + ", ".join(f"{base(r, 'publish_limit', 'ratio'):.2f}" for r in sel)))
        else:
            print(f"- `{i}` ({len(sel)} runs, `{cmd}`): tensors/s "
                  + ", ".join(f"{r['tensors_per_s'] / 1e6:.2f} M" for r in sel)
                  + f"; best **{max(r['tensors_per_s'] for r in sel) / 1e6:.2f} M**")
    print(f"- host RSS {min(r['host_rss_bytes'] for r in rows) / 2**20:.0f}-{max(r['host_rss_bytes'] for r in rows) / 2**20:.0f} MiB "
          f"over the {len(rows)} runs (limit pool + 64 MiB = {rows[0]['rss_limit_bytes'] / 2**20:.0f} MiB)")


if __name__ == "__main__":
    rows = load(sys.argv[2])
    {"matrix": matrix, "headline": headline, "ceiling": ceiling}[sys.argv[1]](rows)
