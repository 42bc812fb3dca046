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

--more checks 33 models beyond the 13: more classification models (inception_v3, maxvit_t,
vgg, resnet50 and its kin, ...), detection in training mode with targets (Faster/Mask/
Keypoint R-CNN, RetinaNet, FCOS, SSDlite: the loss is the sum of the model's loss dict),
fcn_resnet50 with its auxiliary head, video (r3d_18, mc3_18) and optical flow (raft_small,
whose InstanceNorm2d returns a view the next ReLU(inplace=True) changes). RetinaNet and FCOS
take about two minutes each on two cores.

  PYTHONPATH=build/python /usr/bin/python3 bench/torch_vision_check.py [--models a,b]
      [--more] [--levels module,op] [--out DIR]"""
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=None)
    ap.add_argument("--more", action="store_true", help="the 33 models beyond issue 31's")
    ap.add_argument("--levels", default="module,op")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    torch.set_num_threads(1)
    out = a.out or tempfile.mkdtemp(prefix="adump-vision-")
    failed = 0
    names = a.models.split(",") if a.models else list(MORE if a.more else MODELS)
    for name in names:
        if name not in MODELS and name not in MORE:
            ap.error("unknown model %r" % name)
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
