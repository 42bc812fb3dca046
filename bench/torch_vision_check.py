#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Issue 31's whole model set, too slow for CI (tests/python/test_torch_vision.py runs a few
of them): one training step (forward, loss = mean of the squared output, backward, SGD) of
each of 13 torchvision models, random init, batch 2, small inputs, CPU, one thread, with and
without adump.torch, and for each capture:

  - bit-identical training: the loss, every parameter gradient and every parameter after the
    step equal (torch.equal) the uncaptured run's;
  - no loss recorded (cap.losses empty);
  - module level: every module forward call made with gradients whose output reaches the
    loss has a backward entry in dump.json with an incoming gradient, and each module's
    parameters_grad entry comes before its backward entry, or right after it (a module
    whose inputs take no gradient: msprobe's order, checked by hand against msprobe L0 on
    vit_b_16 and swin_t, the models msprobe can hook on torch 1.13).

Levels: module (format="msprobe", parameters=True, content="stats") and op (content="stats").
Prints one line per model and level, and exits 1 when any check fails.

  PYTHONPATH=build/python /usr/bin/python3 bench/torch_vision_check.py [--models a,b]
      [--levels module,op] [--out DIR]"""
import argparse
import copy
import json
import os
import shutil
import sys
import tempfile
import time

import torch
import torchvision

import adump.torch

MODELS = {                      # name -> (builder keyword arguments, input size)
    "resnet18": ({}, 32),
    "mobilenet_v3_small": ({}, 32),
    "squeezenet1_1": ({}, 64),
    "shufflenet_v2_x0_5": ({}, 32),
    "efficientnet_b0": ({}, 32),
    "densenet121": ({}, 32),
    "googlenet": ({"aux_logits": False, "init_weights": False}, 64),
    "regnet_y_400mf": ({}, 32),
    "convnext_tiny": ({}, 32),
    "swin_t": ({}, 64),
    "vit_b_16": ({"image_size": 32}, 32),
    "lraspp_mobilenet_v3_large": ({}, 64),
    "deeplabv3_mobilenet_v3_large": ({}, 64),
}


def build(name):
    kw, size = MODELS[name]
    torch.manual_seed(0)
    if name.startswith(("lraspp", "deeplabv3")):
        m = getattr(torchvision.models.segmentation, name)(weights_backbone=None,
                                                           num_classes=3, **kw)
    else:
        m = getattr(torchvision.models, name)(num_classes=10, **kw)
    x = torch.randn(2, 3, size, size, generator=torch.Generator().manual_seed(1))
    return m, x


def one_step(model, x, top=None, **kw):
    model = copy.deepcopy(model)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    cap = None

    def step():
        torch.manual_seed(2)
        out = model(x)
        if isinstance(out, dict):
            out = out["out"]
        loss = out.float().pow(2).mean()
        loss.backward()
        return loss.detach()

    if top is None:
        loss = step()
    else:
        with adump.torch.capture(model, top, **kw) as cap:
            loss = step()
            cap.step()
    grads = [p.grad.clone() if p.grad is not None else None for p in model.parameters()]
    opt.step()
    return loss, grads, [p.detach().clone() for p in model.parameters()], cap


def check_entries(top):
    """Problems in a module-level msprobe capture's dump.json."""
    step = os.path.join(top, "step0")
    rank = os.path.join(step, os.listdir(step)[0])
    with open(os.path.join(rank, "dump.json")) as f:
        data = json.load(f)["data"]
    names = list(data)
    bad = []
    for n in names:
        if ".forward." in n:
            out = [o for o in data[n].get("output") or [] if isinstance(o, dict)]
            if any(o.get("requires_grad") for o in out):
                b = n.replace(".forward.", ".backward.")
                if b not in data:
                    bad.append("no %s" % b)
                elif not data[b].get("input"):
                    bad.append("%s: no incoming gradient" % b)
        elif ".parameters_grad." in n:
            b = n.replace(".parameters_grad.", ".backward.")
            if b in data and names.index(n) > names.index(b) + 1:
                bad.append("%s long after %s" % (n, b))
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--levels", default="module,op")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    torch.set_num_threads(1)
    out = a.out or tempfile.mkdtemp(prefix="adump-vision-")
    failed = 0
    for name in a.models.split(","):
        model, x = build(name)
        ref = one_step(model, x)
        for level in a.levels.split(","):
            top = os.path.join(out, "%s-%s" % (name, level))
            shutil.rmtree(top, ignore_errors=True)
            kw = dict(level=level, content="stats")
            if level == "module":
                kw.update(format="msprobe", parameters=True)
            t0 = time.perf_counter()
            got = one_step(model, x, top, **kw)
            secs = time.perf_counter() - t0
            bad = []
            if not torch.equal(ref[0], got[0]):
                bad.append("loss differs")
            ng = sum(1 for g, h in zip(ref[1], got[1])
                     if (g is None) != (h is None) or (g is not None and not torch.equal(g, h)))
            if ng:
                bad.append("%d of %d gradients differ" % (ng, len(ref[1])))
            npar = sum(1 for p, q in zip(ref[2], got[2]) if not torch.equal(p, q))
            if npar:
                bad.append("%d parameters differ after the step" % npar)
            if got[3].losses:
                bad.append("%d losses: %s" % (len(got[3].losses), got[3].losses[:2]))
            if level == "module":
                bad += check_entries(top)
            failed += bool(bad)
            print("%-30s %-6s %s (%.1f s)%s" % (name, level, "FAIL" if bad else "ok", secs,
                                                "".join("\n    " + b for b in bad[:8])),
                  flush=True)
    if not a.out:
        shutil.rmtree(out, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
