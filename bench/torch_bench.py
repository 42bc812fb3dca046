#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Training-step cost of dumping, adump.torch against msprobe, on issue 24's model: a 2-layer
nn.TransformerEncoder (dim 256, 4 heads, feed-forward 1024, batch_first), input 8 x 64 x 256,
loss = output.sum(), AdamW, torch.set_num_threads(1). Modes, each run in its own process,
alternated over rounds (the order rotates every round):
  none            no dump
  module-stats    adump.torch.capture(level="module", content="stats")
  module-tensor   adump.torch.capture(level="module", content="tensor")
  op-stats        adump.torch.capture(level="op", content="stats")
  op-tensor       adump.torch.capture(level="op", content="tensor")
  ms-stats-L0     msprobe PrecisionDebugger, task "statistics", level L0   (with --msprobe)
  ms-tensor-L0    msprobe PrecisionDebugger, task "tensor", level L0       (with --msprobe)
A step is forward, backward, optimizer step, and the tool's end of step (cap.step(), which
waits until the step's dumps are written; msprobe's stop/step). Prints per mode the median
ms/step [min..max] over every timed step of every round, the added ms/step against none, the
MB dumped per step (the files' sizes), the added ms per dumped MB and the added CPU ms/step
(the process's, all threads); then issue 24 item 6's three targets as ratios of added step
time (and, as a check on a shared machine, of added CPU time), pass or fail:
  module stats added <= 1/3 of msprobe statistics L0's added time
  op stats added < op tensor added
  module tensor added <= 1/4 of msprobe tensor L0's added time

  PYTHONPATH=build/python /usr/bin/python3 bench/torch_bench.py \\
      --msprobe /tmp/msprobe/python:/tmp/msstubs [--steps 8 --warmup 2 --rounds 3
      --modes none,module-stats,... --out /tmp/adump-torch-bench]

--msprobe is a path list (':'-separated) put in front of sys.path in the msprobe runs: an
msprobe that imports on this torch. Without it the msprobe modes and their targets are left
out."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

ADUMP_MODES = ["none", "module-stats", "module-tensor", "op-stats", "op-tensor"]
MSPROBE_MODES = ["ms-stats-L0", "ms-tensor-L0"]


def tree_bytes(d):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)


def child(a):
    """One mode in this process: prints one JSON line {"times": [...], "bytes": n}."""
    if a.msprobe:
        sys.path[:0] = a.msprobe.split(":")
    import torch
    import torch.nn as nn

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.TransformerEncoder(nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True), 2)
    x = torch.randn(8, 64, 256)
    opt = torch.optim.AdamW(model.parameters())

    def step():
        model(x).sum().backward()
        opt.step()
        opt.zero_grad()

    for _ in range(a.warmup):
        step()
    out = os.path.join(a.out, a.child)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    times, cpus = [], []
    mode = a.child

    def timed(fn):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)

    if mode == "none":
        for _ in range(a.steps):
            timed(step)
    elif mode.startswith("ms-"):
        from msprobe.pytorch import PrecisionDebugger
        task = "statistics" if mode.startswith("ms-stats") else "tensor"
        cfg = os.path.join(a.out, mode + ".json")
        with open(cfg, "w") as f:
            json.dump({"task": task, "dump_path": out, "rank": [], "step": [], "level": "L0",
                       "async_dump": False,
                       task: {"scope": [], "list": [], "data_mode": ["all"],
                              "summary_mode": "statistics"}}, f)
        dbg = PrecisionDebugger(config_path=cfg)
        def ms_step():
            dbg.start(model)
            step()
            dbg.stop()
            dbg.step()

        for _ in range(a.steps):
            timed(ms_step)
        os.unlink(cfg)
    else:
        import adump.torch
        level, content = mode.split("-")
        with adump.torch.capture(model, out, level=level, content=content) as cap:
            def cap_step():
                step()
                cap.step()

            for _ in range(a.steps):
                timed(cap_step)
        if cap.losses:
            raise SystemExit("%s: losses: %s" % (mode, cap.losses[:3]))
    nbytes = tree_bytes(out)
    shutil.rmtree(out, ignore_errors=True)
    print(json.dumps({"times": times, "cpus": cpus, "bytes": nbytes}))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=8, help="timed steps per run")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps before the tool starts")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--modes", default=None, help="comma-separated (default: all that apply)")
    p.add_argument("--msprobe", default=None, help="path list that makes msprobe importable")
    p.add_argument("--out", default="/tmp/adump-torch-bench")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        return child(a)
    modes = a.modes.split(",") if a.modes else ADUMP_MODES + (MSPROBE_MODES if a.msprobe else [])
    for m in modes:
        if m not in ADUMP_MODES + MSPROBE_MODES:
            p.error("unknown mode %s" % m)
        if m in MSPROBE_MODES and not a.msprobe:
            p.error("%s needs --msprobe" % m)
    import torch
    print("torch_bench: issue 24's model (2-layer TransformerEncoder, dim 256, 4 heads, ff 1024, "
          "seq 64, batch 8, AdamW), torch %s, 1 thread; %d rounds x %d timed steps after %d "
          "warm-up, modes alternated, each in its own process; out %s" % (
              torch.__version__, a.rounds, a.steps, a.warmup, a.out))
    times = {m: [] for m in modes}
    cpus = {m: [] for m in modes}
    nbytes = {m: [] for m in modes}
    os.makedirs(a.out, exist_ok=True)
    for r in range(a.rounds):
        order = modes[r % len(modes):] + modes[:r % len(modes)]
        for m in order:
            cmd = [sys.executable, os.path.abspath(__file__), "--child", m, "--steps",
                   str(a.steps), "--warmup", str(a.warmup), "--out", a.out]
            if a.msprobe:
                cmd += ["--msprobe", a.msprobe]
            res = subprocess.run(cmd, stdout=subprocess.PIPE, check=True, text=True)
            got = json.loads(res.stdout.strip().splitlines()[-1])
            times[m] += got["times"]
            cpus[m] += got["cpus"]
            nbytes[m].append(got["bytes"] / a.steps)
    med = {m: statistics.median(times[m]) for m in modes}
    cmed = {m: statistics.median(cpus[m]) for m in modes}
    base, cbase = med.get("none"), cmed.get("none")
    added = {m: med[m] - base for m in modes} if base is not None else {}
    cadded = {m: cmed[m] - cbase for m in modes} if cbase is not None else {}
    print("  %-14s %26s %13s %10s %16s %14s" % ("mode", "ms/step median [min..max]",
                                              "added ms/step", "MB/step", "added ms per MB",
                                              "added CPU ms"))
    for m in modes:
        mb = statistics.median(nbytes[m]) / 1e6
        add = added.get(m)
        print("  %-14s %8.1f [%7.1f..%7.1f] %13s %10.2f %16s %14s" % (
            m, med[m] * 1e3, min(times[m]) * 1e3, max(times[m]) * 1e3,
            "%+.1f" % (add * 1e3) if add is not None else "-", mb,
            "%.2f" % (add * 1e3 / mb) if add is not None and mb > 0.05 and m != "none" else "-",
            "%+.1f" % (cadded[m] * 1e3) if cadded else "-"))
    print("  (CPU: the process's, every thread, median per step: steadier than the step's wall "
          "time on a shared machine)")
    for what, add in (("added step time", added), ("added CPU time", cadded)):
        targets(what, add)
    shutil.rmtree(a.out, ignore_errors=True)
    return 0


def targets(what, added):
    print("  targets (issue 24 item 6), %s as ratios:" % what)
    checks = (("module-stats", "ms-stats-L0", 1 / 3, "<=",
               "module stats / msprobe statistics L0"),
              ("op-stats", "op-tensor", 1.0, "<", "op stats / op tensor"),
              ("module-tensor", "ms-tensor-L0", 1 / 4, "<=",
               "module tensor / msprobe tensor L0"))
    for num, den, limit, op, label in checks:
        if num not in added or den not in added:
            print("    %-40s n/a (mode not run)" % label)
            continue
        ratio = added[num] / added[den] if added[den] > 0 else float("inf")
        ok = ratio <= limit if op == "<=" else ratio < limit
        print("    %-40s %6.3f  (target %s %.3f)  %s" % (label, ratio, op, limit,
                                                       "PASS" if ok else "FAIL"))


if __name__ == "__main__":
    sys.exit(main())
