#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Training-step cost of dumping, adump.torch against msprobe. --model transformer (the default)
is issue 24's model: a 2-layer nn.TransformerEncoder (dim 256, 4 heads, feed-forward 1024,
batch_first), input 8 x 64 x 256, loss = output.sum(), AdamW. --model NAME is any
torchvision.models classification model (issue 31's speed item), random init, 10 classes,
input --batch x 3 x --size x --size (default 2 x 3 x 64 x 64; vit_* get image_size=--size),
loss = cross entropy, SGD (momentum 0.9). torch.set_num_threads(1) in every mode. Modes, each
run in its own process, alternated over rounds (the order rotates every round):
  none            no dump
  module-stats    adump.torch.capture(level="module", content="stats")
  module-tensor   adump.torch.capture(level="module", content="tensor")
  op-stats        adump.torch.capture(level="op", content="stats")
  op-tensor       adump.torch.capture(level="op", content="tensor")
  module-window   adump.torch.capture(level="module", window_steps=2): the flight recorder,
                  every step's statistics on disk, the last 2 steps' tensors in memory, the
                  default trigger (no trigger fires in these runs: nothing is persisted)
  op-window       the same at level="op"
  module-windowref  module-window with zero_copy=True: the window holds the tensors by
                  reference (nothing copied at hand-over; a parameter, and a tensor an
                  earlier step saw changed in place, copied)
  op-windowref    the same at level="op"
  ms-stats-L0     msprobe PrecisionDebugger, task "statistics", level L0   (with --msprobe)
  ms-tensor-L0    msprobe PrecisionDebugger, task "tensor", level L0       (with --msprobe)
(--format msprobe: the adump modes write msprobe's layout, one dump.json a step with the
modules' parameters, as msprobe does; default cann: one CANN dump file per dump.)
A step is forward, backward, optimizer step, and the tool's end of step (cap.step(), which
waits until the step's dumps are written; msprobe's stop/step). The tool's first
--tool-warmup steps (default 3) run before the timed ones and are reported apart: a run's
per-step cost is its steady one (a window's first steps touch its arena's pages for the first
time, about 45 CPU ms each on the transformer). Prints each round's median CPU
ms/step per mode as it goes; then per mode the median ms/step [min..max] over every timed
step of every round, the added ms/step against none, the MB dumped per step (the files'
sizes), the added ms per dumped MB, the added CPU ms/step (the process's, all threads) and the
CPU ms/step's range over the rounds' medians; then the targets (issue 24 item 6; issue 31's
speed item asks the first and third of CPU time on a torchvision model) as ratios of added
step time and of added CPU time, pass or fail:
  module stats added <= 1/3 of msprobe statistics L0's added time
  op stats added < op tensor added
  module tensor added <= 1/4 of msprobe tensor L0's added time
  module window added <= 1.5 x module stats added, and <= 1/3 of msprobe statistics L0's
    (issue 32; the same for module-windowref)
and, so that a verdict does not hang on a shared machine's swings, the same targets on the
rounds' ranges: each round's added CPU (its median less that round's none), the worst round
of the first mode against the best round of the second must meet the target. With
--baseline B each tool's process first times B steps without the tool (after the warm-up),
and the targets are also given on the added CPU against those: a process's step time can
sit 10 % above or below another's for the same work (where its memory landed), more than the
tools add, and against its own steps that bias cancels.

--paired: in each mode's process every timed step is followed by one with the tool paused
(adump: `with cap.paused()`, no cap.step(), so the pair is one step of the capture; msprobe: a
step between stop() and start()), its hooks still in place; the added CPU is the median of
the pairs' differences, the model's swings (the machine's neighbours, where a process's
memory landed) common to both steps of a pair. --blas DIR: torch in every mode's process takes
libblas.so.3 from DIR (bench/openblas.sh unpacks Debian's single-threaded OpenBLAS): with
Debian's reference BLAS the transformer's step is ~900 ms, and the tools' 10-40 ms are less
than its swings; with OpenBLAS ~160 ms. Neither changes what a tool does in a step.

msprobe on torch 1.13 cannot run a model that modifies a module's output in place (its L0
backward hook makes the output a view of a custom Function: RuntimeError "Output 0 of
BackwardHookFunctionBackward is a view and is being modified inplace"). That is every
torchvision CNN with nn.ReLU(inplace=True) and the like, and resnet*, mobilenet_v3_*,
efficientnet_*, convnext_* (`out += identity` on a submodule's output). --no-inplace turns
off every submodule's inplace flag and makes resnet's and mobilenet_v3's residual adds out
of place (the same modules in the same order, the same numbers, in every mode); resnet*,
mobilenet_v2, mobilenet_v3_*, squeezenet1_1 and shufflenet_v2_* then run, vit_b_16 and
swin_t run as they are.

  PYTHONPATH=build/python /usr/bin/python3 bench/torch_bench.py \\
      --msprobe /tmp/msprobe/python:/tmp/msstubs [--steps 8 --warmup 2 --rounds 3
      --modes none,module-stats,... --out /tmp/adump-torch-bench]
  ... --format msprobe --paired --blas $(bench/openblas.sh) --steps 20 --rounds 6 \\
      --modes none,module-stats,module-window,module-windowref,ms-stats-L0
  ... --model mobilenet_v2 --no-inplace --modes none,module-stats,module-tensor,ms-stats-L0,\\
      ms-tensor-L0 --rounds 8

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

ADUMP_MODES = ["none", "module-stats", "module-tensor", "op-stats", "op-tensor",
               "module-window", "op-window", "module-windowref", "op-windowref"]
MSPROBE_MODES = ["ms-stats-L0", "ms-tensor-L0"]


def tree_bytes(d):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)


VISION_CLASSES = 10


def out_of_place_residuals():
    """torchvision's residual blocks add the shortcut into their last module's output in place
    (resnet's BasicBlock and Bottleneck: `out += identity`; mobilenet_v3's InvertedResidual:
    `result += input`), which msprobe's L0 hooks refuse on torch 1.13. In this process they
    add out of place: the same modules called in the same order, the same numbers."""
    from torchvision.models import mobilenetv3, resnet

    def basic(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)

    def bottleneck(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)

    def inverted(self, x):
        result = self.block(x)
        return result + x if self.use_res_connect else result

    resnet.BasicBlock.forward = basic
    resnet.Bottleneck.forward = bottleneck
    mobilenetv3.InvertedResidual.forward = inverted


def vision_model(name, size, batch, no_inplace=False):
    """torchvision.models.<name>, random init, VISION_CLASSES classes, and a batch x 3 x size x
    size input. no_inplace: every submodule with an inplace flag (ReLU, ReLU6, Hardswish,
    Dropout, ...) computes out of place instead, and so do resnet's and mobilenet_v3's
    residual adds (out_of_place_residuals()): the same numbers, one more tensor each."""
    import torch
    import torchvision

    fn = getattr(torchvision.models, name, None)
    if fn is None or not callable(fn) or name.startswith("_") or name[0].isupper():
        raise SystemExit("torch_bench: no torchvision classification model %r" % name)
    kw = {"num_classes": VISION_CLASSES}
    if name in ("googlenet", "inception_v3"):
        kw.update(aux_logits=False, init_weights=True)
    if name.startswith("vit_"):
        kw["image_size"] = size
    model = fn(weights=None, **kw)
    if no_inplace:
        out_of_place_residuals()
        for m in model.modules():
            if getattr(m, "inplace", None) is True:
                m.inplace = False
    x = torch.randn(batch, 3, size, size, generator=torch.Generator().manual_seed(1))
    return model, x


def child(a):
    """One mode in this process: prints one JSON line {"times": [...], "bytes": n}."""
    if a.msprobe:
        sys.path[:0] = a.msprobe.split(":")
    import torch
    import torch.nn as nn

    torch.set_num_threads(1)
    torch.manual_seed(0)
    if a.model == "transformer":
        model = nn.TransformerEncoder(nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True),
                                      2)
        x = torch.randn(8, 64, 256)
        opt = torch.optim.AdamW(model.parameters())

        def loss_of(out):
            return out.sum()
    else:
        model, x = vision_model(a.model, a.size, a.batch, a.no_inplace)
        y = torch.arange(x.shape[0]) % VISION_CLASSES
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def loss_of(out):
            return nn.functional.cross_entropy(out, y)
    model.train()

    def step():
        loss_of(model(x)).backward()
        opt.step()
        opt.zero_grad()

    for _ in range(a.warmup):
        step()
    # Each run writes into a directory of its own, removed only when the bench ends: removing
    # thousands of files makes ext4 skip those inodes (recently_deleted()) while it allocates
    # new ones for a minute or more, a cost in the kernel that would land on whichever mode
    # runs next (measured: mobilenet_v2's msprobe-format tensor dumps add 250..330 CPU
    # ms a step after a removal, 122 on tmpfs).
    out = os.path.join(a.out, "%s.r%d" % (a.child, a.round))
    os.makedirs(out)
    times, cpus = [], []
    mode = a.child

    def timed(fn, times=times, cpus=cpus):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)

    # This process's own steps without the tool, before it starts (--baseline).
    base_times, base_cpus = [], []
    for _ in range(a.baseline if mode != "none" else 0):
        timed(step, base_times, base_cpus)

    # --paired: each timed step of the tool is followed by one without it (the tool paused,
    # its hooks still in place), timed into off_cpus; the pairs' differences are the added
    # cost, the model's swings common to both steps of a pair.
    off_times, off_cpus = [], []

    # --tool-warmup: the tool's first steps, timed apart (first_cpus) and left out of the
    # rest: what a tool does once (a window's arena touched for the first time, its first
    # steps' pages; msprobe's first dump.json) is not the step cost of a long run.
    first_cpus = []

    def paired(on, off):
        for _ in range(a.tool_warmup):
            timed(on, [], first_cpus)
        for _ in range(a.steps):
            timed(on)
            if a.paired:
                timed(off, off_times, off_cpus)

    if mode == "none":
        paired(step, step)
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

        paired(ms_step, step)
        os.unlink(cfg)
    else:
        import adump.torch
        level, content = mode.split("-")
        kw = {"window_steps": 2} if content.startswith("window") else {"content": content}
        if content == "windowref":
            kw["zero_copy"] = True
        with adump.torch.capture(model, out, level=level, format=a.format, **kw) as cap:
            def cap_step():
                step()
                cap.step()

            def off_step():
                # No cap.step(): the pair is one step of the capture, nothing dumped in
                # its second half (as msprobe's off step is a step between stop and start).
                with cap.paused():
                    step()

            paired(cap_step, off_step)
        if cap.losses:
            raise SystemExit("%s: losses: %s" % (mode, cap.losses[:3]))
        if content.startswith("window") and cap.windows:
            raise SystemExit("%s: a trigger fired on a clean run: %s" % (mode, cap.windows))
    nbytes = tree_bytes(out)
    print(json.dumps({"times": times, "cpus": cpus, "bytes": nbytes, "base_cpus": base_cpus,
                      "off_cpus": off_cpus, "first_cpus": first_cpus}))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="transformer",
                   help="transformer (issue 24's, the default) or a torchvision.models "
                        "classification model by name")
    p.add_argument("--size", type=int, default=64, help="torchvision input height and width")
    p.add_argument("--batch", type=int, default=2, help="torchvision batch size")
    p.add_argument("--no-inplace", action="store_true",
                   help="torchvision: turn off the inplace flag of every submodule (msprobe's "
                        "L0 hooks fail on in-place ops on a module output on torch < 2)")
    p.add_argument("--format", default="cann", choices=("cann", "msprobe"),
                   help="the adump modes' dump format (msprobe: one dump.json a step, with "
                        "the modules' parameters, as msprobe writes)")
    p.add_argument("--steps", type=int, default=8, help="timed steps per run")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps before the tool starts")
    p.add_argument("--tool-warmup", type=int, default=3,
                   help="steps with the tool on before the timed ones, in every mode: timed "
                   "apart and reported as the tool's first steps, not in the targets")
    p.add_argument("--baseline", type=int, default=0,
                   help="timed steps without the tool in each tool's process, after the "
                   "warm-up, before the tool starts: the added CPU against the process's own "
                   "steps as well (0: only against the none runs)")
    p.add_argument("--paired", action="store_true",
                   help="each timed step of a mode is followed by one with the tool paused "
                   "(adump: cap.paused(); msprobe: between stop() and start()) in the same "
                   "process; the targets are also given on the median of the pairs' CPU "
                   "differences")
    p.add_argument("--blas", default=None,
                   help="a directory put first on LD_LIBRARY_PATH in every mode's process: "
                   "another libblas.so.3 for torch (bench/openblas.sh prints one for "
                   "Debian's OpenBLAS, unpacked, not installed)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--modes", default=None, help="comma-separated (default: all that apply)")
    p.add_argument("--msprobe", default=None, help="path list that makes msprobe importable")
    p.add_argument("--out", default="/tmp/adump-torch-bench")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--round", type=int, default=0, help=argparse.SUPPRESS)
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
    if a.model == "transformer":
        what = ("issue 24's model (2-layer TransformerEncoder, dim 256, 4 heads, ff 1024, seq 64, "
                "batch 8, AdamW)")
    else:
        vision_model(a.model, a.size, a.batch, a.no_inplace)  # fails early on a name torchvision lacks
        what = ("torchvision %s (random init, %d classes, input %d x 3 x %d x %d, cross entropy, "
                "SGD%s)" % (a.model, VISION_CLASSES, a.batch, a.size, a.size,
                         ", submodules' inplace flags off" if a.no_inplace else ""))
    what += ", adump format %s" % a.format
    env = dict(os.environ)
    if a.blas:
        if not os.path.isfile(os.path.join(a.blas, "libblas.so.3")):
            p.error("--blas %s: no libblas.so.3 there" % a.blas)
        env["LD_LIBRARY_PATH"] = a.blas + (":" + env["LD_LIBRARY_PATH"]
                                           if env.get("LD_LIBRARY_PATH") else "")
        what += ", libblas.so.3 from %s" % a.blas
    print("torch_bench: %s, torch %s, 1 thread; %d rounds x %d timed steps%s after %d warm-up "
          "and %d with the tool, modes alternated, each in its own process; out %s" % (
              what, torch.__version__, a.rounds, a.steps,
              " (each followed by a step with the tool paused)" if a.paired else "",
              a.warmup, a.tool_warmup, a.out), flush=True)
    times = {m: [] for m in modes}
    cpus = {m: [] for m in modes}
    rcpu = {m: [] for m in modes}  # per round: the run's median CPU s/step
    rown = {m: [] for m in modes}  # per round: that less the run's own baseline (--baseline)
    nbytes = {m: [] for m in modes}
    first = {m: [] for m in modes}  # the tool's first steps' CPU s (--tool-warmup)
    pairs = {m: [] for m in modes}  # --paired: every pair's CPU difference (on - off)
    rpair = {m: [] for m in modes}  # per round: the median of those
    base_out = a.out
    a.out = os.path.join(base_out, "run%d" % os.getpid())
    os.makedirs(a.out)
    for r in range(a.rounds):
        order = modes[r % len(modes):] + modes[:r % len(modes)]
        for m in order:
            cmd = [sys.executable, os.path.abspath(__file__), "--child", m, "--round", str(r),
                   "--steps",
                   str(a.steps), "--warmup", str(a.warmup), "--tool-warmup",
                   str(a.tool_warmup), "--out", a.out, "--model", a.model,
                   "--size", str(a.size), "--batch", str(a.batch), "--format", a.format,
                   "--baseline", str(a.baseline)]
            if a.no_inplace:
                cmd.append("--no-inplace")
            if a.paired:
                cmd.append("--paired")
            if a.msprobe:
                cmd += ["--msprobe", a.msprobe]
            res = subprocess.run(cmd, stdout=subprocess.PIPE, check=True, text=True, env=env)
            got = json.loads(res.stdout.strip().splitlines()[-1])
            times[m] += got["times"]
            first[m] += got["first_cpus"]
            cpus[m] += got["cpus"]
            rcpu[m].append(statistics.median(got["cpus"]))
            if got["base_cpus"]:
                rown[m].append(rcpu[m][-1] - statistics.median(got["base_cpus"]))
            nbytes[m].append(got["bytes"] / (a.steps + a.tool_warmup))
            if got["off_cpus"]:
                d = [x - y for x, y in zip(got["cpus"], got["off_cpus"])]
                pairs[m] += d
                rpair[m].append(statistics.median(d))
        print("  round %d/%d: CPU ms/step %s" % (r + 1, a.rounds, ", ".join(
            "%s %.1f" % (m, rcpu[m][-1] * 1e3) for m in modes)), flush=True)
        if a.paired:
            print("    paired: added CPU ms/step %s" % ", ".join(
                "%s %+.1f" % (m, rpair[m][-1] * 1e3) for m in modes if m != "none"),
                flush=True)
    med = {m: statistics.median(times[m]) for m in modes}
    cmed = {m: statistics.median(cpus[m]) for m in modes}
    base, cbase = med.get("none"), cmed.get("none")
    added = {m: med[m] - base for m in modes} if base is not None else {}
    cadded = {m: cmed[m] - cbase for m in modes} if cbase is not None else {}
    # per round, each mode's median CPU/step less the same round's "none"
    radded = ({m: [c - b for c, b in zip(rcpu[m], rcpu["none"])] for m in modes}
              if "none" in modes else {})
    print("  %-14s %26s %13s %10s %16s %14s %26s" % (
        "mode", "ms/step median [min..max]", "added ms/step", "MB/step", "added ms per MB",
        "added CPU ms", "CPU ms/step, rounds' range"))
    for m in modes:
        mb = statistics.median(nbytes[m]) / 1e6
        add = added.get(m)
        print("  %-14s %8.1f [%7.1f..%7.1f] %13s %10.2f %16s %14s %8.1f [%7.1f..%7.1f]" % (
            m, med[m] * 1e3, min(times[m]) * 1e3, max(times[m]) * 1e3,
            "%+.1f" % (add * 1e3) if add is not None else "-", mb,
            "%.2f" % (add * 1e3 / mb) if add is not None and mb > 0.05 and m != "none" else "-",
            "%+.1f" % (cadded[m] * 1e3) if cadded else "-", cmed[m] * 1e3,
            min(rcpu[m]) * 1e3, max(rcpu[m]) * 1e3))
    print("  (CPU: the process's, every thread, median per step: steadier than the step's wall "
          "time on a shared machine; rounds' range: the lowest and highest of each round's "
          "median)")
    if a.tool_warmup and "none" in modes:
        fb = statistics.median(first["none"])
        print("  the tool's first %d steps (not timed above), CPU ms/step median less none's: %s"
              % (a.tool_warmup, ", ".join("%s %+.1f" % (m, (statistics.median(first[m]) - fb)
                                                         * 1e3) for m in modes if m != "none")))
    for what, add in (("added step time", added), ("added CPU time", cadded)):
        targets(what, add)
    if radded:
        rounds_check(radded)
    own = {m: statistics.median(v) for m, v in rown.items() if v}
    if own:
        print("  added CPU ms/step against each process's own %d steps without the tool "
              "(--baseline), per round, and the median:" % a.baseline)
        for m in own:
            print("    %-16s %s  median %+.1f" % (m, " ".join("%+.1f" % (x * 1e3)
                                                              for x in rown[m]), own[m] * 1e3))
        targets("added CPU time against the process's own baseline", own)
    if a.paired:
        pmed = {m: statistics.median(pairs[m]) for m in modes if m != "none"}
        print("  paired: added CPU ms/step, the median of each round's pairs, and of every "
              "pair (none: the swing between two steps of the same work):")
        for m in modes:
            print("    %-16s %s  median %+.1f" % (m, " ".join("%+.1f" % (x * 1e3)
                                                              for x in rpair[m]),
                                                  statistics.median(pairs[m]) * 1e3))
        targets("paired added CPU time", pmed)
        rounds_check({m: rpair[m] for m in modes}, "paired")
    shutil.rmtree(a.out, ignore_errors=True)
    try:
        os.rmdir(base_out)
    except OSError:
        pass
    return 0


CHECKS = (("module-stats", "ms-stats-L0", 1 / 3, "<=", "module stats / msprobe statistics L0"),
          ("op-stats", "op-tensor", 1.0, "<", "op stats / op tensor"),
          ("module-tensor", "ms-tensor-L0", 1 / 4, "<=", "module tensor / msprobe tensor L0"),
          ("module-window", "module-stats", 1.5, "<=", "module window / module stats"),
          ("module-window", "ms-stats-L0", 1 / 3, "<=", "module window / msprobe stat. L0"),
          ("module-windowref", "module-stats", 1.5, "<=", "module windowref / module stats"),
          ("module-windowref", "ms-stats-L0", 1 / 3, "<=", "module windowref / msprobe st. L0"))


def passes(ratio, op, limit):
    return ratio <= limit if op == "<=" else ratio < limit


def targets(what, added):
    print("  targets (issue 24 item 6, issue 31's speed item, issue 32), %s as ratios:" % what)
    for num, den, limit, op, label in CHECKS:
        if num not in added or den not in added:
            print("    %-40s n/a (mode not run)" % label)
            continue
        ratio = added[num] / added[den] if added[den] > 0 else float("inf")
        print("    %-40s %6.3f  (target %s %.3f)  %s" % (
            label, ratio, op, limit, "PASS" if passes(ratio, op, limit) else "FAIL"))


def rounds_check(radded, what=None):
    """Each round's added CPU ms/step, and whether the ranges over rounds stay apart: the
    worst round of the numerator against the best round of the denominator. @what: the
    rounds' values are named already (paired)."""
    if what is None:
        print("  added CPU ms/step per round (mode's median less the same round's none):")
        for m in radded:
            if m != "none":
                print("    %-14s %s" % (m, " ".join("%+.1f" % (v * 1e3) for v in radded[m])))
    print("  targets on %srounds' ranges (highest round of the first / lowest round of the "
          "second; per-round ratios' range):" % (what + " " if what else ""))
    for num, den, limit, op, label in CHECKS:
        if num not in radded or den not in radded:
            continue
        lo_den = min(radded[den])
        worst = max(radded[num]) / lo_den if lo_den > 0 else float("inf")
        per = [n / d if d > 0 else float("inf") for n, d in zip(radded[num], radded[den])]
        print("    %-40s %6.3f  (target %s %.3f)  %s; per round %.3f..%.3f" % (
            label, worst, op, limit, "PASS" if passes(worst, op, limit) else "FAIL",
            min(per), max(per)))


if __name__ == "__main__":
    sys.exit(main())
