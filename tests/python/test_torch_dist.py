# SPDX-License-Identifier: Apache-2.0
"""adump.torch under distributed training: two processes on the gloo backend over loopback
(127.0.0.1) train a tiny DistributedDataParallel model (with buffers, which DDP broadcasts
from rank 0 every forward) and call all_reduce, an async broadcast and all_gather, at module
and op level, with the capture created before and after init_process_group, with and without
RANK set. Checked: each rank writes only into its own step<N>/rank<R> (no proc<pid> left,
nothing shared), collectives' dumped outputs are the completed values (all_reduce's sum,
rank 0's broadcast data, both ranks' all_gather data, DDP's reduced gradients equal on both
ranks), their dfx_message msprobe's entry (non-tensor arguments, the list all_gather fills
null among the inputs). Also: a capture killed with SIGKILL leaves nothing stale; a second
capture into a used dump_path never mixes with the first. Bounded: one pair of processes runs
the four cases, each process under a timeout.
Exits 77 without torch or gloo."""
import json
import os
import socket
import subprocess
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

try:
    import torch
    import torch.distributed as dist
except ImportError:
    print("test_torch_dist: torch is not installed (python3-torch): skipped")
    sys.exit(77)
if not dist.is_available() or not dist.is_gloo_available():
    print("test_torch_dist: torch has no gloo backend: skipped")
    sys.exit(77)

import adump  # noqa: E402

# (level, capture created before init_process_group, RANK set)
CASES = [("op", True, True), ("op", False, False), ("module", True, False),
         ("module", False, True)]
STEPS = 2
WORKER_TIMEOUT = 240


def worker(rank, top, ports):
    import torch.nn as nn
    import adump.torch
    torch.set_num_threads(1)
    out = {}
    for (level, before, with_rank), port in zip(CASES, ports):
        case = "%s-%s-%s" % (level, "before" if before else "after",
                             "rank" if with_rank else "norank")
        if with_rank:
            os.environ["RANK"] = str(rank)
        else:
            os.environ.pop("RANK", None)
        torch.manual_seed(5)
        model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
        init = dict(backend="gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank,
                    world_size=2)
        if before:
            dist.init_process_group(**init)
        path = os.path.join(top, case)
        rec = out[case] = {"pid": os.getpid(), "grads": [], "bn_mean": []}
        with adump.torch.capture(model, path, level=level, backward=True) as cap:
            if not before:
                # Dumped before any process group exists: into proc<pid>.
                with torch.no_grad():
                    model(torch.randn(2, 4))
                dist.init_process_group(**init)
            ddp = nn.parallel.DistributedDataParallel(model)
            g = torch.Generator().manual_seed(100 + rank)          # each rank its own data
            for step in range(STEPS):
                ddp(torch.randn(6, 4, generator=g)).pow(2).sum().backward()
                rec["grads"].append(torch.cat([p.grad.reshape(-1)
                                               for p in model.parameters()]).tolist())
                rec["bn_mean"].append(model[1].running_mean.tolist())
                t = torch.full((5,), float(rank + 1))
                dist.all_reduce(t)
                b = torch.arange(4.0) + 10 * rank
                dist.broadcast(b, 0, async_op=True).wait()
                outs = [torch.zeros(2) for _ in range(2)]
                dist.all_gather(outs, torch.tensor([1.0, 2.0]) + 10 * rank)
                model.zero_grad()
                cap.step()
        rec["losses"] = [list(x) for x in cap.losses]
        dist.destroy_process_group()
    with open(os.path.join(top, "rank%d.json" % rank), "w") as f:
        json.dump(out, f)


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class TwoRanks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.top = helpers.tmpdir("torch-dist")
        ports = ",".join(map(str, free_ports(len(CASES))))
        cls.outputs = helpers.run_ranks(__file__, [cls.top, ports], WORKER_TIMEOUT)
        cls.rec = []
        for r in range(2):
            with open(os.path.join(cls.top, "rank%d.json" % r)) as f:
                cls.rec.append(json.load(f))

    def test_workers_ran(self):
        for rc, out in self.outputs:
            self.assertEqual(rc, 0, out[-3000:])

    def dumps(self, case, step, rank):
        d = os.path.join(self.top, case, "step%d" % step, "rank%d" % rank)
        self.assertTrue(os.path.isdir(d), d)
        return {x.op_name: x for x in adump.walk(d)}

    def check_case(self, level, before, with_rank):
        case = "%s-%s-%s" % (level, "before" if before else "after",
                             "rank" if with_rank else "norank")
        for r in range(2):
            self.assertEqual(self.rec[r][case]["losses"], [], case)
        root = os.path.join(self.top, case)
        for step in range(STEPS):
            # Each rank only in its own directory; no proc<pid> left behind.
            entries = sorted(e for e in os.listdir(os.path.join(root, "step%d" % step))
                             if not e.endswith(".jsonl"))
            self.assertEqual(entries, ["rank0", "rank1"], (case, step))
            by_rank = [self.dumps(case, step, r) for r in range(2)]
            for r, d in enumerate(by_rank):
                ar = d["Distributed.all_reduce.0.forward"]
                np.testing.assert_array_equal(ar.inputs[0], np.full(5, r + 1.0, np.float32))
                np.testing.assert_array_equal(ar.outputs[0], np.full(5, 3.0, np.float32))
                bc = d["Distributed.broadcast.0.forward"]
                np.testing.assert_array_equal(bc.inputs[0], np.arange(4.0, dtype=np.float32)
                                              + 10 * r)
                np.testing.assert_array_equal(bc.outputs[0], np.arange(4.0, dtype=np.float32))
                # msprobe's entry: non-tensor arguments kept, the output being the arguments
                # after the call.
                info = json.loads(bc.dfx_message)
                self.assertEqual(info["input_args"][1], {"type": "int", "value": 0})
                self.assertEqual(info["input_kwargs"],
                                 {"async_op": {"type": "bool", "value": True}})
                self.assertEqual(info["output"][0]["tensor"], "output.0")
                self.assertEqual(info["output"][1:], [{"type": "int", "value": 0},
                                                      {"type": "bool", "value": True}])
                # all_gather: the list it fills is no input (null, not dumped); its output
                # holds both ranks' tensors, then this rank's own.
                ag = d["Distributed.all_gather.0.forward"]
                info = json.loads(ag.dfx_message)
                self.assertIsNone(info["input_args"][0])
                self.assertEqual(info["input_args"][1]["tensor"], "input.0")
                self.assertEqual(len(ag.inputs), 1)
                np.testing.assert_array_equal(ag.inputs[0], np.array([1.0, 2.0], np.float32)
                                              + 10 * r)
                self.assertEqual([[o["tensor"] for o in info["output"][0]],
                                  info["output"][1]["tensor"]],
                                 [["output.0", "output.1"], "output.2"])
                for i, want in enumerate(([1.0, 2.0], [11.0, 12.0], [1.0 + 10 * r, 2.0 + 10 * r])):
                    np.testing.assert_array_equal(ag.outputs[i], np.array(want, np.float32))
            if level == "op":
                # DDP's gradient allreduce (C++, reached through the dispatcher): dumped
                # after its work completed, so equal on both ranks and equal to the gradients
                # the optimizer saw; its input (the local gradients) differs per rank.
                red = [sorted(n for n in d if n.startswith("Distributed.allreduce_.")
                              and n.endswith(".backward")) for d in by_rank]
                self.assertTrue(red[0], sorted(by_rank[0])[:20])
                self.assertEqual(red[0], red[1])
                for name in red[0]:
                    o0, o1 = (by_rank[r][name].outputs[0] for r in range(2))
                    np.testing.assert_array_equal(o0, o1, name)
                    self.assertFalse(np.array_equal(by_rank[0][name].inputs[0],
                                                    by_rank[1][name].inputs[0]), name)
                for r in range(2):
                    got = np.concatenate([by_rank[r][n].outputs[0].reshape(-1)
                                          for n in red[0]])
                    want = np.array(self.rec[r][case]["grads"][step], np.float32)
                    np.testing.assert_allclose(np.sort(got), np.sort(want), rtol=1e-6)
                # DDP's buffer broadcast from rank 0 (each forward): the same on both.
                bcs = sorted(n for n in by_rank[0] if n.startswith("Distributed.broadcast_."))
                self.assertTrue(bcs)
                for name in bcs:
                    np.testing.assert_array_equal(by_rank[0][name].outputs[0],
                                                  by_rank[1][name].outputs[0], name)
            else:
                for d in by_rank:
                    self.assertIn("Module.0.Linear.forward.0", d)
                    self.assertTrue(any(n.startswith("Module.0.Linear.backward.") for n in d))
        if not before:
            # The forward made before init_process_group landed in step0 of its own rank.
            for r in range(2):
                names = self.dumps(case, 0, r)
                want = "Aten.addmm.0.forward" if level == "op" else "Module.0.Linear.forward.0"
                self.assertIn(want, names)
        rc, out = helpers.tool("verify", "--quiet", root)
        self.assertEqual(rc, 0, out)

    def test_op_before_rank(self):
        self.check_case("op", True, True)

    def test_op_after_norank(self):
        self.check_case("op", False, False)

    def test_module_before_norank(self):
        self.check_case("module", True, False)

    def test_module_after_rank(self):
        self.check_case("module", False, True)


KILLED = r"""
import sys, torch, torch.nn as nn, adump.torch
model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64))
with adump.torch.capture(model, sys.argv[1], level="op") as cap:
    for step in range(100000):
        model(torch.randn(32, 64)).sum().backward()
        cap.step()
        if step == 2:
            print("ready", flush=True)
"""


class Killed(unittest.TestCase):
    def test_nothing_stale(self):
        """SIGKILL mid-capture leaves no link, no temporary name: what was published reads
        back whole (adump verify), in step<N>/proc<pid> (the rank was never known), and
        what was handed over but not written the journal names."""
        top = helpers.tmpdir("torch-kill")
        p = subprocess.Popen([sys.executable, "-c", KILLED, top], stdout=subprocess.PIPE)
        try:
            self.assertEqual(p.stdout.readline().strip(), b"ready")
        finally:
            p.kill()
            p.wait(timeout=60)
        entries = []
        for root, dirs, files in os.walk(top):
            for e in dirs + files:
                path = os.path.join(root, e)
                self.assertFalse(os.path.islink(path), path)
                entries.append(os.path.relpath(path, top))
        self.assertFalse([e for e in entries if e.endswith((".part", ".tmp"))
                          or ".adump" in e], entries[:20])
        self.assertIn(os.path.join("step0", "proc%d" % p.pid), entries)
        rc, out = helpers.tool("verify", "--json", top)
        v = json.loads(out)
        # Every file reads back whole. A kill inside a step can also land while dumps are
        # handed over and not yet written (small ones wait for the worker's doorbell):
        # the hand-over journal names each, and verify lists it as missing, the one problem
        # allowed, and only in the killed process's own directory.
        self.assertEqual([v[k] for k in ("bad", "part", "failed", "lost", "index_leftover",
                                         "segment_leftover", "in_progress")],
                         [0] * 7, out)
        self.assertEqual(v["ok"], v["files"], out)
        journal = "adump-journal-%d-" % p.pid
        self.assertEqual([q for q in v["problems"] if q["kind"] != "missing" or
                          journal not in os.path.basename(q["file"])], [], out)
        self.assertEqual(v["missing"], len(v["problems"]), out)
        self.assertEqual(rc, 1 if v["missing"] else 0, out)


class Rerun(unittest.TestCase):
    """A second capture into a dump_path that holds one never mixes with it."""

    def run_once(self, top):
        import torch.nn as nn
        import adump.torch
        model = nn.Linear(3, 2)
        with adump.torch.capture(model, top, level="module", backward=False,
                                 keep_root=True) as cap:
            model(torch.ones(1, 3))
            cap.step()
        return cap

    def test_without_group(self):
        top = helpers.tmpdir("torch-rerun")
        first = self.run_once(top)
        self.assertEqual(first.losses, [])
        self.assertEqual(os.listdir(os.path.join(top, "step0")), ["rank0"])
        before = helpers.files_below(os.path.join(top, "step0", "rank0"))
        second = self.run_once(top)
        # rank0 is taken: the second capture stays in proc<pid>, and says so.
        self.assertEqual(len(second.losses), 1, second.losses)
        self.assertIn("rank0", second.losses[0].name)
        self.assertEqual(second.losses[0].cause, "rank_taken")
        self.assertEqual(sorted(os.listdir(os.path.join(top, "step0"))),
                         ["proc%d" % os.getpid(), "rank0"])
        self.assertEqual(helpers.files_below(os.path.join(top, "step0", "rank0")), before)

    def test_steps_apart_renamed(self):
        """Steps that dumped nothing between steps that did: each directory a step made
        becomes rank0 at the end, none is left in proc<pid>. The steps are kept as runs
        (StepRuns), which hold what a set would, in order, and a long run in one."""
        import random
        import torch.nn as nn
        import adump.torch
        from adump._torch_dist import StepRuns
        top = helpers.tmpdir("torch-steps-apart")
        model = nn.Linear(3, 2)
        with adump.torch.capture(model, top, level="module", backward=False,
                                 keep_root=True) as cap:
            for step in range(7):
                if step in (0, 2, 3, 6):
                    model(torch.ones(1, 3))
                cap.step()
        self.assertEqual(cap.losses, [])
        self.assertEqual(sorted(os.listdir(top)), ["step0", "step2", "step3", "step6"])
        for step in (0, 2, 3, 6):
            self.assertEqual(os.listdir(os.path.join(top, "step%d" % step)), ["rank0"])
        rnd = random.Random(7)
        for _ in range(2000):
            runs, ref = StepRuns(), set()
            for _ in range(rnd.randint(0, 30)):
                n = rnd.randint(0, 25)
                runs.add(n)
                ref.add(n)
            self.assertEqual(list(runs), sorted(ref))
            self.assertEqual(bool(runs), bool(ref))
        runs = StepRuns()
        for n in range(1000000):
            runs.add(n)
        self.assertEqual(runs._runs, [[0, 999999]])

    def test_with_group_refused(self):
        top = helpers.tmpdir("torch-rerun-group")
        port = free_ports(1)[0]
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=0,
                                world_size=1)
        try:
            self.run_once(top)
            self.assertEqual(os.listdir(os.path.join(top, "step0")), ["rank0"])
            with self.assertRaises(FileExistsError) as cm:
                self.run_once(top)
            self.assertIn("rank0", str(cm.exception))
        finally:
            dist.destroy_process_group()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(int(sys.argv[2]), sys.argv[3], [int(p) for p in sys.argv[4].split(",")])
        sys.exit(0)
    unittest.main()
