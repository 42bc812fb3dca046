#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Issue 32's "a trigger that cries wolf is worse than none": torchvision models trained for
--steps steps (default 50; random init, 10 classes, batch 2, small inputs, cross entropy, SGD
with momentum, CPU, one thread) under adump.torch.capture(window_steps=2) with the default
triggers (nonfinite). A clean run must never write a window: for each model and level, the
windows written (must be none), the losses (none), the training's own check that every loss
stayed finite, and the time. Exits 1 if any run wrote a window or lost a dump. Too slow for
CI (about a second a step on two cores).

  PYTHONPATH=build/python /usr/bin/python3 bench/window_clean_check.py
      [--models resnet18,mobilenet_v3_small,vit_b_16] [--levels module,op] [--steps 50]
      [--format cann|msprobe] [--out DIR]"""
import argparse
import math
import os
import shutil
import sys
import tempfile
import time

import torch
import torchvision

import adump.torch

SIZES = {"vit_b_16": 32, "swin_t": 64, "squeezenet1_1": 64, "googlenet": 64}


def build(name):
    torch.manual_seed(0)
    kw = {"image_size": 32} if name == "vit_b_16" else {}
    if name == "googlenet":
        kw = {"aux_logits": False, "init_weights": False}
    return getattr(torchvision.models, name)(num_classes=10, **kw), SIZES.get(name, 32)


def run(name, level, steps, fmt, top):
    model, size = build(name)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    g = torch.Generator().manual_seed(1)
    path = os.path.join(top, "%s-%s" % (name, level))
    finite = True
    t0 = time.perf_counter()
    with adump.torch.capture(model, path, level=level, format=fmt, window_steps=2) as cap:
        for _ in range(steps):
            with cap.paused():
                x = torch.randn(2, 3, size, size, generator=g)
                y = torch.randint(0, 10, (2,), generator=g)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            finite &= math.isfinite(loss.item())
            with cap.paused():
                opt.step()
                opt.zero_grad()
            cap.step()
    secs = time.perf_counter() - t0
    info = cap.window_info()
    shutil.rmtree(path, ignore_errors=True)
    return cap.windows, cap.losses, finite, info, secs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="resnet18,mobilenet_v3_small,vit_b_16")
    ap.add_argument("--levels", default="module")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--format", default="cann", choices=("cann", "msprobe"))
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    torch.set_num_threads(1)
    top = a.out or tempfile.mkdtemp(prefix="adump-window-clean-")
    bad = 0
    print("window_clean_check: torch %s, %d steps, window_steps=2, default triggers, format %s"
          % (torch.__version__, a.steps, a.format), flush=True)
    for name in a.models.split(","):
        for level in a.levels.split(","):
            windows, losses, finite, info, secs = run(name, level, a.steps, a.format, top)
            ok = not windows and not losses
            bad += not ok
            print("  %-22s %-6s %s: windows %d, losses %d, loss finite every step: %s, "
                  "steps %d, held %d dumps / %.1f MB at the end, %.1f s" % (
                      name, level, "PASS" if ok else "FAIL", len(windows), len(losses),
                      finite, info["step"], info["held_dumps"], info["held_bytes"] / 1e6,
                      secs), flush=True)
    if not a.out:
        shutil.rmtree(top, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
