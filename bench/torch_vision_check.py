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

--checks picks what runs on each model (default: train, the above):
  clean    two runs of the same program, captured alike, in both formats, at both levels, in
           statistics and tensor mode (eight pairs): `adump compare --recursive` finds no
           divergent tensor and exits 0 (--clean-threads N: the second run on N intra-op
           threads, float32 sums in another order; README "Verdicts" says which models
           pass that);
  perturb  a NaN in one weight, a 1e-3 relative noise on it (the middle Conv or Linear the
           model calls), and its middle BatchNorm's running_var x4 (in eval mode, where it is
           read), statistics mode, both formats and levels: compare's first divergence is the
           module whose weight it is (or the BatchNorm) at module level, an op reading the
           weight (an input row) or a batch_norm at op level; for the NaN, scan's origin is
           the same module, or the same kind of op. Not on the detection models.

--more checks 31 models beyond the 13: more classification models (inception_v3, maxvit_t,
vgg, resnet50 and its kin, ...), detection in training mode with targets (Faster/Mask/
Keypoint R-CNN, RetinaNet, FCOS, SSDlite: the loss is the sum of the model's loss dict),
fcn_resnet50 with its auxiliary head, video (r3d_18, mc3_18) and optical flow (raft_small,
whose InstanceNorm2d returns a view the next ReLU(inplace=True) changes). RetinaNet and FCOS
take about two minutes each on two cores.

  PYTHONPATH=build/python /usr/bin/python3 bench/torch_vision_check.py [--models a,b]
      [--more] [--levels module,op] [--checks train,clean,perturb] [--clean-threads N]
      [--out DIR]"""
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

MORE = {
    "alexnet": ({}, 64), "vgg11_bn": ({}, 32),
    "inception_v3": ({"aux_logits": False, "init_weights": False}, 75),
    "maxvit_t": ({"input_size": (224, 224)}, 224),
    "mnasnet0_5": ({}, 32), "mobilenet_v2": ({}, 32), "mobilenet_v3_large": ({}, 32),
    "efficientnet_b1": ({}, 32), "efficientnet_v2_s": ({}, 32), "regnet_x_400mf": ({}, 32),
    "regnet_y_800mf": ({}, 32), "resnet50": ({}, 32), "resnext50_32x4d": ({}, 32),
    "wide_resnet50_2": ({}, 32), "shufflenet_v2_x1_0": ({}, 32), "squeezenet1_0": ({}, 64),
    "densenet169": ({}, 32), "convnext_small": ({}, 32), "swin_v2_t": ({}, 64),
    "vit_b_32": ({"image_size": 64}, 64),
    "fcn_resnet50": ({"aux_loss": True}, 64),
    "r3d_18": ({}, 32), "mc3_18": ({}, 32),
    "raft_small": ({}, 128),
    "fasterrcnn_mobilenet_v3_large_320_fpn": ({"min_size": 64, "max_size": 96}, 64),
    "ssdlite320_mobilenet_v3_large": ({}, 64),
    "fasterrcnn_resnet50_fpn": ({"min_size": 64, "max_size": 96}, 64),
    "maskrcnn_resnet50_fpn": ({"min_size": 64, "max_size": 96}, 64),
    "keypointrcnn_resnet50_fpn": ({"min_size": 64, "max_size": 96}, 64),
    "retinanet_resnet50_fpn": ({}, 64),
    "fcos_resnet50_fpn": ({}, 64),
}
DETECTION = ("fasterrcnn", "maskrcnn", "keypointrcnn", "retinanet", "fcos", "ssdlite")


class FlowPair(torch.nn.Module):
    """raft_small on a batch of two images: the flows from the first to the second, each
    update's (the loss takes them all, as RAFT's training does: each update's flow reaches
    it only through its own prediction)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return torch.stack(self.m(x[:1], x[1:], num_flow_updates=2))


def detection_targets(images):
    """Two boxes' worth of training targets for @images (masks, keypoints where the model
    takes them)."""
    targets = []
    for n, im in enumerate(images):
        boxes = torch.tensor([[5., 6., 40., 50.], [10., 3., 30., 60.]][:n + 1])
        masks = torch.zeros(len(boxes), im.shape[1], im.shape[2], dtype=torch.uint8)
        masks[:, 10:30, 10:30] = 1
        kp = torch.zeros(len(boxes), 17, 3)
        kp[:, :, 0], kp[:, :, 1], kp[:, :, 2] = 12, 15, 1
        targets.append({"boxes": boxes, "labels": torch.ones(len(boxes), dtype=torch.int64),
                        "masks": masks, "keypoints": kp})
    return targets


def build(name):
    """(model, its arguments)."""
    kw, size = MODELS[name] if name in MODELS else MORE[name]
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    M = torchvision.models
    if name.startswith(("lraspp", "deeplabv3", "fcn")):
        m = getattr(M.segmentation, name)(weights_backbone=None, num_classes=3, **kw)
    elif name.startswith(DETECTION):
        m = getattr(M.detection, name)(weights_backbone=None,
                                       num_classes=2 if "keypoint" in name else 3, **kw)
        images = [torch.rand(3, size, size + 16, generator=g),
                  torch.rand(3, size + 8, size, generator=g)]
        return m, (images, detection_targets(images))
    elif name in ("r3d_18", "mc3_18"):
        m = getattr(M.video, name)(num_classes=10, **kw)
        return m, (torch.randn(2, 3, 4, size, size, generator=g),)
    elif name == "raft_small":
        # Images in [-1, 1]; 64 x 64 is too small for its correlation pyramid (NaN flows).
        m = FlowPair(M.optical_flow.raft_small(**kw))
        return m, (torch.rand(2, 3, size, size, generator=g) * 2 - 1,)
    else:
        m = getattr(M, name)(num_classes=10, **kw)
    return m, (torch.randn(2, 3, size, size, generator=g),)


def loss_of(out):
    if isinstance(out, dict) and "out" in out:      # segmentation: out (and aux)
        return sum(o.float().pow(2).mean() for o in out.values())
    if isinstance(out, dict):                       # detection in training: its losses
        return sum(out.values())
    return out.float().pow(2).mean()


def same(a, b):
    return (a is None) == (b is None) and (a is None or torch.equal(a, b))


def one_step(model, args, top=None, **kw):
    model = copy.deepcopy(model)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    cap = None

    def step():
        torch.manual_seed(2)
        loss = loss_of(model(*args))
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


def capture_step(model, args, top, train=True, perturb=None, threads=1, **kw):
    """One step of a copy of @model (forward, and backward when @train) on @threads intra-op
    threads, captured into @top, after @perturb(copy) under no_grad."""
    model = copy.deepcopy(model)
    model.train(train)
    if perturb is not None:
        with torch.no_grad():
            perturb(model)
    shutil.rmtree(top, ignore_errors=True)
    torch.set_num_threads(threads)
    try:
        with adump.torch.capture(model, top, **kw) as cap:
            torch.manual_seed(2)
            out = model(*args)
            if train:
                loss_of(out).backward()
            cap.step()
    finally:
        torch.set_num_threads(1)        # main()'s, whatever happened
    if cap.losses:
        raise RuntimeError("%d losses: %s" % (len(cap.losses), cap.losses[:2]))


def divergent_rows(summary):
    rows = []
    for pair in summary["pairs"]:
        rows += ["%s %s: %s" % (r["TensorIndex"], r["verdict"], r["reason"])
                 for r in adump.compare(pair["my"], pair["golden"])
                 if r["verdict"] in ("warning", "error")]
    return rows


def check_clean(name, model, args, levels, out, threads):
    failed = 0
    for fmt in ("msprobe", "cann"):
        for level in levels:
            for content in ("stats", "tensor"):
                kw = dict(level=level, content=content, format=fmt, parameters=True)
                a, b = os.path.join(out, "clean-a"), os.path.join(out, "clean-b")
                t0 = time.perf_counter()
                capture_step(model, args, a, **kw)
                capture_step(model, args, b, threads=threads, **kw)
                s = adump.compare(b, a, recursive=True).summary
                bad = divergent_rows(s) if s["first_divergent"] is not None else []
                if s["exit_code"] != 0:
                    bad.insert(0, "compare exits %d" % s["exit_code"])
                for d in (a, b):                # op-level tensors: gigabytes a run
                    shutil.rmtree(d)
                failed += bool(bad)
                print("%-30s clean %-7s %-6s %-6s %s (%.1f s)%s" % (
                    name, fmt, level, content, "FAIL" if bad else "ok",
                    time.perf_counter() - t0, "".join("\n    " + b for b in bad[:8])),
                      flush=True)
    return failed


def called_modules(model, args):
    """The modules @model's forward calls (MultiheadAttention's out_proj is never called:
    its weight is read by its parent)."""
    model = copy.deepcopy(model)
    called, handles = set(), []
    for path, m in model.named_modules():
        handles.append(m.register_forward_pre_hook(
            lambda mod, a, path=path: called.add(path)))
    torch.manual_seed(2)
    with torch.no_grad():
        model.eval()(*args)
    return called


def middle(model, kinds, called):
    got = [(p, m) for p, m in model.named_modules()
           if p in called and isinstance(m, kinds) and getattr(m, "weight", None) is not None]
    return got[len(got) // 2] if got else (None, None)


def check_perturb(name, model, args, levels, out):
    called = called_modules(model, args)
    wpath, wmod = middle(model, (torch.nn.Conv2d, torch.nn.Conv3d, torch.nn.Linear), called)
    bpath, bmod = middle(model, (torch.nn.BatchNorm2d, torch.nn.BatchNorm3d), called)

    def nan(m):
        dict(m.named_modules())[wpath].weight.view(-1)[0] = float("nan")

    def noise(m):
        w = dict(m.named_modules())[wpath].weight
        w.mul_(1 + 1e-3 * torch.randn(w.shape, generator=torch.Generator().manual_seed(7)))

    def var4(m):
        dict(m.named_modules())[bpath].running_var.mul_(4)

    cases = [("nan", nan, wpath, wmod, True), ("noise", noise, wpath, wmod, True)]
    if bmod is not None:
        cases.append(("var_x4", var4, bpath, bmod, False))
    failed = 0
    for fmt in ("msprobe", "cann"):
        for level in levels:
            kw = dict(level=level, content="stats", format=fmt, parameters=True)
            golden = {}
            for case, fn, path, mod, train in cases:
                if train not in golden:
                    golden[train] = os.path.join(out, "perturb-golden-%d" % train)
                    capture_step(model, args, golden[train], train, **kw)
                my = os.path.join(out, "perturb-my")
                capture_step(model, args, my, train, fn, **kw)
                first = adump.compare(my, golden[train], recursive=True).summary
                first = first["first_divergent"]
                want = "Module.%s.%s.forward.0" % (path, type(mod).__name__)
                bad = []
                if first is None:
                    bad.append("no divergence found")
                elif level == "module" and first["op"].replace("_", ".") != \
                        want.replace("_", "."):
                    bad.append("first divergence %s, not %s" % (first["op"], want))
                elif level == "op" and case == "var_x4" and "batch_norm" not in first["op"]:
                    bad.append("first divergence %s, not a batch_norm" % first["op"])
                elif level == "op" and case != "var_x4" and ":input:" not in first["tensor"]:
                    bad.append("first divergence %s, not the weight an op reads" %
                               first["tensor"])
                if case == "nan":
                    o = adump.scan(my).origin
                    if o is None:
                        bad.append("scan: no origin")
                    elif level == "module" and o["op_name"].replace("_", ".") != \
                            want.replace("_", "."):
                        bad.append("scan origin %s, not %s" % (o["op_name"], want))
                    elif first is not None and level == "op" and \
                            o["op_name"].replace("_", ".") != first["op"].replace("_", "."):
                        bad.append("scan origin %s, compare's first %s" % (o["op_name"],
                                                                          first["op"]))
                failed += bool(bad)
                print("%-30s %-7s %-7s %-6s %s %s%s" % (
                    name, case, fmt, level, "FAIL" if bad else "ok",
                    first["op"] if first else None, "".join("\n    " + b for b in bad)),
                      flush=True)
                shutil.rmtree(my)
            for d in golden.values():
                shutil.rmtree(d)
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=None)
    ap.add_argument("--more", action="store_true", help="the 31 models beyond issue 31's")
    ap.add_argument("--levels", default="module,op")
    ap.add_argument("--checks", default="train", help="train, clean, perturb (comma-separated)")
    ap.add_argument("--clean-threads", type=int, default=1,
                    help="intra-op threads of clean's second run")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    torch.set_num_threads(1)
    out = a.out or tempfile.mkdtemp(prefix="adump-vision-")
    failed = 0
    names = a.models.split(",") if a.models else list(MORE if a.more else MODELS)
    checks = a.checks.split(",")
    for c in checks:
        if c not in ("train", "clean", "perturb"):
            ap.error("unknown check %r" % c)
    for name in names:
        if name not in MODELS and name not in MORE:
            ap.error("unknown model %r" % name)
        model, x = build(name)
        levels = a.levels.split(",")
        if "clean" in checks:
            failed += check_clean(name, model, x, levels, out, a.clean_threads)
        if "perturb" in checks and not name.startswith(DETECTION):
            failed += check_perturb(name, model, x, levels, out)
        if "train" not in checks:
            continue
        ref = one_step(model, x)
        for level in levels:
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
            ng = sum(1 for g, h in zip(ref[1], got[1]) if not same(g, h))
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
