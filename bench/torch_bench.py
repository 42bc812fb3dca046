#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Training-step cost of dumping a PyTorch transformer, in one sitting, runs alternated:
  none        no dump
  tensor      adump.torch, level="module", backward=True: every module call's inputs and
              outputs, forward and backward, as tensors
  tensor-fwd  the same, forward only (the bytes the naive dumper writes)
  stats       adump.torch, content="stats", backward=True
  naive       a forward hook calling numpy.save for each input and output tensor
Prints one line per mode: median step time [min..max], overhead against none, bytes dumped
per step and the dump rate; then the targets. Needs /usr/bin/python3 with torch and the adump
package (PYTHONPATH=build/python, or installed).

  /usr/bin/python3 bench/torch_bench.py [--layers 4 --dim 256 --heads 4 --seq 128
      --batch 16 --vocab 2000 --steps 6 --rounds 3 --out /tmp/adump-torch-bench]"""
import argparse
import os
import shutil
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn as nn

import adump
import adump.torch


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, h, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, need_weights=False)
        x = x + a
        return x + self.mlp(self.ln2(x))


class Model(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.emb = nn.Embedding(a.vocab, a.dim)
        self.blocks = nn.Sequential(*[Block(a.dim, a.heads) for _ in range(a.layers)])
        self.ln = nn.LayerNorm(a.dim)
        self.head = nn.Linear(a.dim, a.vocab)

    def forward(self, x):
        return self.head(self.ln(self.blocks(self.emb(x))))


class Naive:
    """What simple tools do: a forward hook that numpy.save's every tensor."""

    def __init__(self, model, out):
        self.out, self.step_no, self.handles, self.counts, self.bytes = out, 0, [], {}, 0
        self.seconds = 0.0
        for path, m in model.named_modules():
            self.handles.append(m.register_forward_hook(self.hook(path or "root", m)))

    def hook(self, path, m):
        def fn(mod, args, output):
            t0 = time.perf_counter()
            n = self.counts.get(path, 0)
            self.counts[path] = n + 1
            d = os.path.join(self.out, "step%d" % self.step_no)
            os.makedirs(d, exist_ok=True)
            for kind, vals in (("input", args), ("output", (output,))):
                ts = [t for t in vals if isinstance(t, torch.Tensor)]
                for i, t in enumerate(ts):
                    a = t.detach().cpu().numpy()
                    self.bytes += a.nbytes
                    np.save(os.path.join(d, "%s.%s.forward.%d.%s.%d.npy" % (
                        path, type(mod).__name__, n, kind, i)), a)
            self.seconds += time.perf_counter() - t0
        return fn

    def step(self):
        self.step_no += 1
        self.counts = {}

    def close(self):
        for h in self.handles:
            h.remove()


def run(mode, a, state, xs, out):
    torch.manual_seed(0)
    model = Model(a)
    model.load_state_dict(state)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    cap, naive = None, None
    if mode.startswith("tensor") or mode == "stats":
        cap = adump.torch.capture(model, out, level="module", backward=(mode != "tensor-fwd"),
                                  content="stats" if mode == "stats" else "tensor")
        cap.__enter__()
    elif mode == "naive":
        naive = Naive(model, out)
    times, cpus = [], []
    for i, x in enumerate(xs):
        t0 = time.perf_counter()
        c0 = time.process_time()
        logits = model(x)
        loss = nn.functional.cross_entropy(logits.reshape(-1, a.vocab), x.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if cap:
            cap.step()          # waits until the step's dumps are written
        if naive:
            naive.step()
        if i == 0:              # the first step warms up allocator, threads, session
            hand0 = cap.handover_seconds if cap else naive.seconds if naive else 0.0
        else:
            times.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)   # all threads: adump's workers too
    nbytes, hand = 0, 0.0
    if cap:
        cap.__exit__(None, None, None)
        nbytes = cap.stats.get("bytes", 0)
        hand = cap.handover_seconds - hand0
        assert not cap.losses, cap.losses
    if naive:
        naive.close()
        nbytes = naive.bytes
        hand = naive.seconds - hand0
    return times, cpus, nbytes / len(xs), hand / len(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--vocab", type=int, default=2000)
    p.add_argument("--steps", type=int, default=6, help="steps per run (the first untimed)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--modes", default="none,tensor,tensor-fwd,stats,naive")
    p.add_argument("--out", default="/tmp/adump-torch-bench")
    a = p.parse_args()
    modes = a.modes.split(",")
    torch.manual_seed(0)
    state = Model(a).state_dict()
    params = sum(v.numel() for v in state.values())
    g = torch.Generator().manual_seed(1)
    xs = [torch.randint(0, a.vocab, (a.batch, a.seq), generator=g) for _ in range(a.steps)]
    print("torch_bench: %d layers, dim %d, %d heads, seq %d, batch %d, vocab %d: %.1f M "
          "params; torch %s, %d threads; %d rounds x %d timed steps, modes alternated" % (
              a.layers, a.dim, a.heads, a.seq, a.batch, a.vocab, params / 1e6,
              torch.__version__, torch.get_num_threads(), a.rounds, a.steps - 1))
    times = {m: [] for m in modes}
    cpus = {m: [] for m in modes}
    hands = {m: [] for m in modes}
    per_step = {m: 0 for m in modes}
    for r in range(a.rounds):
        order = modes[r % len(modes):] + modes[:r % len(modes)]
        for m in order:
            out = os.path.join(a.out, m)
            shutil.rmtree(out, ignore_errors=True)
            t, c, nbytes, hand = run(m, a, state, xs, out)
            times[m] += t
            cpus[m] += c
            hands[m].append(hand)
            per_step[m] = nbytes
            shutil.rmtree(out, ignore_errors=True)
    base = statistics.median(times["none"]) if "none" in times else None
    cbase = statistics.median(cpus["none"]) if "none" in cpus else None
    res, cres = {}, {}
    for m in modes:
        med = res[m] = statistics.median(times[m])
        cmed = cres[m] = statistics.median(cpus[m])
        over = "%+6.1f %%" % ((med / base - 1) * 100) if base else ""
        cover = "%+6.1f %%" % ((cmed / cbase - 1) * 100) if cbase else ""
        rate = per_step[m] / med / 1e6 if per_step[m] else 0
        hand = statistics.median(hands[m])
        print("  %-10s step %7.1f ms [%6.1f..%6.1f] %s | cpu %7.1f ms %s | hand-over %6.1f "
              "ms/step | %6.1f MB/step %5.0f MB/s" % (
                  m, med * 1e3, min(times[m]) * 1e3, max(times[m]) * 1e3, over, cmed * 1e3,
                  cover, hand * 1e3, per_step[m] / 1e6, rate))
    if base and "naive" in res and "tensor-fwd" in res:
        for label, r, b in (("step time", res, base), ("cpu time", cres, cbase)):
            added_adump, added_naive = r["tensor-fwd"] - b, r["naive"] - b
            print("  added %s, forward tensors: adump %.1f ms, naive %.1f ms (ratio %.2f)"
                  % (label, added_adump * 1e3, added_naive * 1e3,
                     added_adump / added_naive if added_naive > 0 else float("nan")))
    if "naive" in hands and "tensor-fwd" in hands:
        ha, hn = statistics.median(hands["tensor-fwd"]), statistics.median(hands["naive"])
        print("  hand-over time on the training thread, forward tensors: adump %.1f ms, "
              "naive %.1f ms per step (ratio %.3f)" % (ha * 1e3, hn * 1e3, ha / hn if hn else 0))
    shutil.rmtree(a.out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
