# SPDX-License-Identifier: Apache-2.0
"""Issue 32, the flight recorder from Python across processes: two gloo ranks where only
rank 1 sees a NaN both write the same steps (module and op level) and say first_rank 1, the
agreement itself not dumped (its cost printed); RSS over 20 steps stays within window_bytes
plus a constant (in a child process). The model: window_helpers.py. Exits 77 without
torch."""
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("test_window_dist: torch is not installed (python3-torch): skipped")
    sys.exit(77)

import adump  # noqa: E402
import adump.torch  # noqa: E402
from window_helpers import MLP, cann_key  # noqa: E402

WORKER_TIMEOUT = 240


# ---- memory ----------------------------------------------------------------------------------

class Memory(unittest.TestCase):
    def setUp(self):
        self.top = helpers.tmpdir("window")

    def path(self, name):
        return os.path.join(self.top, name)

    def test_rss_stays_within_the_window(self):
        out = subprocess.run([sys.executable, __file__, "--rss", self.path("rss")],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=WORKER_TIMEOUT)
        self.assertEqual(out.returncode, 0, out.stdout[-3000:])
        r = json.loads(out.stdout.strip().splitlines()[-1])
        # far more than the window went through it, and the window was full
        self.assertGreater(r["dumped_bytes"], 4 * r["window_bytes"])
        self.assertGreater(r["held_bytes"], r["window_bytes"] // 2)
        self.assertLessEqual(r["growth"], r["window_bytes"] + r["pool_bytes"] + (48 << 20), r)


# ---- two ranks --------------------------------------------------------------------------------

def dist_worker(rank, top, store):
    import torch.distributed as dist
    torch.set_num_threads(1)
    # A file store, not a TCP port: a port found free and closed again could be taken by
    # another test's ranks before rank 0 listens on it.
    dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=2)
    torch.manual_seed(0)
    model = MLP()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(100 + rank)       # each rank its own data
    out = {}
    for level in ("module", "op"):
        with adump.torch.capture(model, os.path.join(top, level), level=level,
                                 window_steps=3) as cap:
            for step in range(6):
                with cap.paused():
                    x = torch.randn(4, 8, generator=g)
                    if rank == 1 and step == 3:
                        x[0, 0] = float("nan")
                loss = model(x).pow(2).mean()
                loss.backward()
                with cap.paused():
                    if torch.isfinite(loss):
                        opt.step()
                    opt.zero_grad()
                cap.step()
            # the agreement's cost: the all_reduce alone, as cap.step() makes it
            import time
            t0 = time.perf_counter()
            for _ in range(200):
                cap._agree(False)
            per_step_us = (time.perf_counter() - t0) / 200 * 1e6
        out[level] = {"windows": cap.windows, "losses": [list(x) for x in cap.losses],
                      "rank_dir": cap.rank_dir, "agree_us": per_step_us}
    dist.destroy_process_group()
    with open(os.path.join(top, "rank%d.json" % rank), "w") as f:
        json.dump(out, f)


class TwoRanks(unittest.TestCase):
    def test_a_nan_on_rank_1_persists_on_both(self):
        import torch.distributed as dist
        if not dist.is_available() or not dist.is_gloo_available():
            self.skipTest("torch has no gloo backend")
        top = helpers.tmpdir("window-dist")
        store = os.path.join(helpers.tmpdir("window-dist-store"), "store")
        for rc, out in helpers.run_ranks(__file__, [top, store], WORKER_TIMEOUT):
            self.assertEqual(rc, 0, out[-3000:])
        recs = []
        for r in range(2):
            with open(os.path.join(top, "rank%d.json" % r)) as f:
                recs.append(json.load(f))
        for level in ("module", "op"):
            with self.subTest(level=level):
                self.check_level(top, level, [recs[r][level] for r in range(2)])

    def check_level(self, top, level, recs):
        root = os.path.join(top, level, "window-3")
        for r in range(2):
            self.assertEqual(recs[r]["losses"], [])
            self.assertEqual(recs[r]["windows"], [root])
            self.assertEqual(recs[r]["rank_dir"], "rank%d" % r)
        self.assertEqual(sorted(os.listdir(root)), ["step1", "step2", "step3"])
        for step in (1, 2, 3):
            self.assertEqual(sorted(os.listdir(os.path.join(root, "step%d" % step))),
                             ["rank0", "rank1"])
            names = [sorted(cann_key(n) for n in os.listdir(os.path.join(
                root, "step%d" % step, "rank%d" % r, "0"))) for r in range(2)]
            self.assertEqual(names[0], names[1])
            self.assertTrue(names[0])
        for r in range(2):
            with open(os.path.join(root, "step3", "rank%d" % r, "trigger.json")) as f:
                t = json.load(f)
            self.assertEqual((t["first_rank"], t["rank"], t["world_size"], t["step"],
                              t["steps"]), (1, r, 2, 3, [1, 2, 3]))
            self.assertEqual(t["rule"], "nonfinite" if r == 1 else "call")
            if r == 0:
                self.assertEqual(t["reason"], "rank 1 fired")
        # the agreement was not dumped
        for step in range(6):
            d = os.path.join(top, level, "step%d" % step, "rank0", "0")
            self.assertFalse([n for n in os.listdir(d)
                              if "allreduce" in n.replace("_", "").lower()])
        print("two gloo ranks, %s level: the agreement's all_reduce %.1f / %.1f us per step" %
              (level, recs[0]["agree_us"], recs[1]["agree_us"]), file=sys.stderr)


# ---- the RSS child -------------------------------------------------------------------------------

def vm_rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def rss_child(path):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024))
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(256, 1024)

    def one_step():
        model(x).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
    for _ in range(3):
        one_step()
    window_bytes, pool_bytes = 64 << 20, 16 << 20
    base = vm_rss()
    peak = base
    with adump.torch.capture(model, path, window_steps=50, window_bytes=window_bytes,
                             pool_bytes=pool_bytes, stream_max=2) as cap:
        for _ in range(20):
            one_step()
            cap.step()
            peak = max(peak, vm_rss())
        info = cap.window_info()
    # The tensor bytes that went through the window: the statistics files' Data Size.
    dumped = 0
    for p in helpers.files_below(path):
        if p.endswith(".csv"):
            with open(p) as f:
                dumped += sum(int(line.split(",")[2]) for line in f.readlines()[1:])
    print(json.dumps({"growth": peak - base, "window_bytes": window_bytes,
                      "pool_bytes": pool_bytes, "held_bytes": info["held_bytes"],
                      "dumped_bytes": dumped, "windows": cap.windows}))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        dist_worker(int(sys.argv[2]), sys.argv[3], sys.argv[4])
        sys.exit(0)
    if len(sys.argv) > 1 and sys.argv[1] == "--rss":
        rss_child(sys.argv[2])
        sys.exit(0)
    unittest.main()
