# SPDX-License-Identifier: Apache-2.0
"""msprobe's layout: a tiny model's adump.torch capture exported with `adump export
--msprobe`, and written by the pipeline itself with format="msprobe" (module and op level,
tensors and statistics). Every .pt loads with torch.load(weights_only=True) and equals the
tensor the capture recorded (read back from the CANN files) and what plain hooks saw;
dump.json has msprobe's names and fields, statistics equal torch's (in the tensor's dtype),
md5 is the CRC-32 of the bytes; construct.json gives each call's parent; statistics
captures have task "statistics" without .pt files; adump verify and adump.walk accept the
layout and find a damaged .pt; configurations the format cannot write are refused. Exits 77
without torch."""
import glob
import json
import os
import sys
import unittest
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("test_torch_msprobe: torch is not installed (python3-torch): skipped")
    sys.exit(77)

import adump  # noqa: E402
import adump.torch  # noqa: E402


# A process outside every process group keeps msprobe's proc<pid> directory.
PROC = "proc%d" % os.getpid()


class Blk(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.act = nn.ReLU()

    def forward(self, x, mask=None, scale=1.0):
        return self.act(self.lin(x) * mask) * scale


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.b0 = Blk()
        self.fc = nn.Linear(3, 2)

    def forward(self, ids):
        h = self.emb(ids)
        return self.fc(self.b0(h, mask=torch.ones(3), scale=2.0))


def run(dump_path, steps=2, **kw):
    """Train @steps steps under capture; returns {module call: output seen by a hook}."""
    torch.manual_seed(0)
    m = Net()
    ids = torch.tensor([[1, 2, 3], [4, 5, 9]])
    seen = {}
    counts = {}

    def hook(name):
        def h(mod, args, out):
            n = counts.get(name, 0)
            counts[name] = n + 1
            seen["Module.%s.%s.forward.%d" % (name, type(mod).__name__, n)] = out.detach().clone()
        return h

    handles = [mod.register_forward_hook(hook(name)) for name, mod in m.named_modules() if name]
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    kw.setdefault("parameters", True)       # msprobe's L0 records each module's parameters
    with adump.torch.capture(m, dump_path, **kw) as cap:
        for _ in range(steps):
            counts.clear()
            m(ids).sum().backward()
            opt.step()
            opt.zero_grad()
            cap.step()
            if _ == 0:
                step0 = dict(seen)
    for h in handles:
        h.remove()
    assert not cap.losses, cap.losses
    return step0


def tensors_of(obj):
    """Every tensor description (with data_name or statistics) in a dump.json entry."""
    if isinstance(obj, dict):
        if obj.get("type") == "torch.Tensor":
            yield obj
        else:
            for v in obj.values():
                yield from tensors_of(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from tensors_of(v)


EXPECTED = [
    "Module.emb.Embedding.forward.0", "Module.b0.lin.Linear.forward.0",
    "Module.b0.act.ReLU.forward.0", "Module.b0.Blk.forward.0", "Module.fc.Linear.forward.0",
    "Module.fc.Linear.backward.0", "Module.b0.Blk.backward.0",
    "Module.b0.act.ReLU.backward.0", "Module.b0.lin.Linear.backward.0",
    "Module.emb.Embedding.backward.0", "Module.fc.Linear.parameters_grad.0",
    "Module.b0.lin.Linear.parameters_grad.0", "Module.emb.Embedding.parameters_grad.0",
]


class MsprobeLayout(unittest.TestCase):
    def check_rank_dir(self, d, seen=None):
        doc = json.load(open(os.path.join(d, "dump.json")))
        self.assertEqual(doc["task"], "tensor")
        self.assertEqual(doc["level"], "L0")
        self.assertEqual(doc["framework"], "pytorch")
        self.assertEqual(doc["dump_data_dir"],
                         os.path.realpath(os.path.join(d, "dump_tensor_data")))
        data = doc["data"]
        self.assertEqual(sorted(data), sorted(EXPECTED))
        # forward entries: msprobe's four keys; the kwargs by name, non-tensors as values
        blk = data["Module.b0.Blk.forward.0"]
        self.assertEqual(set(blk), {"input_args", "input_kwargs", "output", "parameters"}
                         & set(blk) | {"input_args", "input_kwargs", "output"})
        self.assertEqual(blk["input_kwargs"]["scale"], {"type": "float", "value": 2.0})
        self.assertEqual(blk["input_kwargs"]["mask"]["data_name"],
                         "Module.b0.Blk.forward.0.kwargs.mask.pt")
        lin = data["Module.b0.lin.Linear.forward.0"]
        self.assertEqual(sorted(lin["parameters"]), ["bias", "weight"])
        self.assertEqual(lin["parameters"]["weight"]["data_name"],
                         "Module.b0.lin.Linear.forward.0.parameters.weight.pt")
        self.assertTrue(lin["parameters"]["weight"]["requires_grad"])
        self.assertEqual(lin["output"][0]["data_name"],
                         "Module.b0.lin.Linear.forward.0.output.0.pt")
        emb = data["Module.emb.Embedding.forward.0"]
        self.assertEqual(emb["input_args"][0]["dtype"], "torch.int64")
        self.assertEqual(emb["input_args"][0]["Max"], 9)
        bwd = data["Module.fc.Linear.backward.0"]
        self.assertEqual(set(bwd), {"input", "output"})
        self.assertEqual(bwd["input"][0]["data_name"], "Module.fc.Linear.backward.0.input.0.pt")
        pg = data["Module.fc.Linear.parameters_grad.0"]
        self.assertEqual(sorted(pg), ["bias", "weight"])
        self.assertEqual(pg["weight"][0]["data_name"],
                         "Module.fc.Linear.parameters_grad.0.weight.pt")
        # every tensor: its .pt loads with weights_only and matches the description
        n = 0
        for name, entry in data.items():
            for t in tensors_of(entry):
                for k in ("dtype", "shape", "Max", "Min", "Mean", "Norm", "requires_grad"):
                    self.assertIn(k, t, name)
                v = torch.load(os.path.join(d, "dump_tensor_data", t["data_name"]),
                               weights_only=True)
                self.assertEqual(str(v.dtype), t["dtype"])
                self.assertEqual(list(v.shape), t["shape"])
                self.assertEqual(float(v.max()), float(t["Max"]))
                self.assertEqual(float(v.min()), float(t["Min"]))
                if v.dtype.is_floating_point:
                    # msprobe's values: torch's statistic in the tensor's dtype, printed as
                    # Python prints it (a float32 statistic is a float32 value); adump sums
                    # in double, torch in float32: equal to the last bit or two.
                    for k, want in (("Max", v.max()), ("Min", v.min()), ("Mean", v.mean()),
                                    ("Norm", v.norm())):
                        self.assertEqual(float(torch.tensor(t[k], dtype=v.dtype)), t[k], k)
                        self.assertAlmostEqual(float(want), t[k],
                                               delta=abs(float(want)) * 2.0 ** -20, msg=k)
                n += 1
        self.assertGreaterEqual(n, 30)
        if seen is not None:
            for name, out in seen.items():
                v = torch.load(os.path.join(d, "dump_tensor_data", name + ".output.0.pt"),
                               weights_only=True)
                self.assertTrue(torch.equal(v, out), name)
        # construct.json: each call's parent
        con = json.load(open(os.path.join(d, "construct.json")))
        self.assertEqual(con["Module.b0.lin.Linear.forward.0"], "Module.b0.Blk.forward.0")
        self.assertEqual(con["Module.b0.act.ReLU.forward.0"], "Module.b0.Blk.forward.0")
        self.assertIsNone(con["Module.b0.Blk.forward.0"])
        self.assertIsNone(con["Module.fc.Linear.forward.0"])
        self.assertEqual(con["Module.b0.lin.Linear.backward.0"], "Module.b0.Blk.backward.0")
        return data

    def test_export_cli(self):
        cap = helpers.tmpdir("msp-cap")
        out = helpers.tmpdir("msp-out")
        seen = run(cap)
        code, text = helpers.tool("export", "--msprobe", cap, out)
        self.assertEqual(code, 0, text)
        self.assertEqual(sorted(os.listdir(out)), ["step0", "step1"])
        data = self.check_rank_dir(os.path.join(out, "step0", "rank0"), seen)
        self.check_rank_dir(os.path.join(out, "step1", "rank0"))
        self.assertEqual(json.load(open(os.path.join(out, "step0", "rank0", "stack.json"))), {})
        # each .pt equals the tensor of the CANN file it came from
        files = {os.path.basename(p).split(".")[1]: p
                 for p in glob.glob(os.path.join(cap, "step0", "rank0", "*", "*"))
                 if not p.endswith(".json")}
        d = adump.open(files["Module_fc_Linear_forward_0"])
        pt = torch.load(os.path.join(out, "step0", "rank0", "dump_tensor_data",
                                     "Module.fc.Linear.forward.0.output.0.pt"),
                        weights_only=True)
        self.assertTrue((np.asarray(d.outputs[0]) == pt.numpy()).all())
        # --md5: msprobe's CRC-32 of the bytes
        out5 = helpers.tmpdir("msp-md5")
        code, text = helpers.tool("export", "--msprobe", "--md5", cap, out5)
        self.assertEqual(code, 0, text)
        t = json.load(open(os.path.join(out5, "step0", "rank0", "dump.json")))["data"][
            "Module.fc.Linear.forward.0"]["output"][0]
        self.assertEqual(t["md5"], "%08x" % zlib.crc32(pt.numpy().tobytes()))
        self.assertIn("Module.fc.Linear.forward.0", data)
        # verify and walk accept the layout; a damaged .pt is found
        code, text = helpers.tool("verify", out)
        self.assertEqual(code, 0, text)
        # walk reads each dump.json entry as a dump (issue 24: walk reads both layouts)
        walked = {}
        for d in adump.walk(out):                   # step0 first: execution order
            walked.setdefault(d.op_name, d)
        self.assertIn("Module.fc.Linear.forward.0", walked)
        self.assertTrue((walked["Module.fc.Linear.forward.0"].outputs[0] == pt.numpy()).all())
        self.assertTrue(adump.verify(out))
        victim = os.path.join(out, "step1", "rank0", "dump_tensor_data",
                              "Module.fc.Linear.forward.0.output.0.pt")
        with open(victim, "r+b") as f:
            f.seek(-30, os.SEEK_END)
            f.truncate()
        code, text = helpers.tool("verify", out)
        self.assertNotEqual(code, 0)
        self.assertIn("Module.fc.Linear.forward.0.output.0.pt", text)
        self.assertFalse(adump.verify(out))
        # nothing to export: a clear error
        code, text = helpers.tool("export", "--msprobe", helpers.tmpdir("msp-empty"), out5)
        self.assertEqual(code, 3, text)
        self.assertIn("no dump files", text)

    def test_format_msprobe(self):
        cap = helpers.tmpdir("msp-fmt")
        seen = run(cap, format="msprobe")
        for step in ("step0", "step1"):
            d = os.path.join(cap, step, PROC)
            self.assertEqual(sorted(os.listdir(d)), ["construct.json", "dump.json",
                                                     "dump_tensor_data", "stack.json"])
        self.check_rank_dir(os.path.join(cap, "step0", PROC), seen)
        # stack=True: msprobe's stack.json, each forward entry under some stack
        cap2 = helpers.tmpdir("msp-stack")
        run(cap2, steps=1, format="msprobe", stack=True)
        st = json.load(open(os.path.join(cap2, "step0", PROC, "stack.json")))
        named = {n for nodes, _ in st.values() for n in nodes}
        self.assertIn("Module.b0.lin.Linear.forward.0", named)
        self.assertTrue(any("test_torch_msprobe.py" in line
                            for _, lines in st.values() for line in lines))
        with self.assertRaises(ValueError):
            adump.torch.capture(Net(), cap, format="npy")
        with self.assertRaises(ValueError):
            adump.torch.capture(Net(), cap, md5=True)           # format "cann"
        for bad in ({"compress": "lz4"}, {"layout": "packed"}, {"io": "direct"}):
            with self.assertRaises(adump.ConfigError) as e:
                adump.torch.capture(Net(), cap, format="msprobe", **bad)
            self.assertIn("format msprobe", str(e.exception))

    def test_tree_of_each_step(self):
        """Each step's construct.json is that step's tree, in its order: a step that calls
        another part of the model, or the same calls in another order, after steps whose
        text was kept, gets its own."""
        top = helpers.tmpdir("msp-tree-steps")
        model = Net()
        ids = torch.tensor([[1, 2, 3]])
        h = model.emb(ids)
        with adump.torch.capture(model, top, format="msprobe", content="stats") as cap:
            for step in range(5):
                if step in (0, 1, 4):
                    model(ids)
                elif step == 2:
                    model.b0(h, mask=torch.ones(3))
                else:
                    model.fc(model.b0(h, mask=torch.ones(3)))
                    model.emb(ids)
                cap.step()
        full = ["Module.emb.Embedding.forward.0", "Module.b0.Blk.forward.0",
                "Module.b0.lin.Linear.forward.0", "Module.b0.act.ReLU.forward.0",
                "Module.fc.Linear.forward.0"]
        want = {0: full, 1: full, 4: full, 2: full[1:4],
                3: full[1:4] + ["Module.fc.Linear.forward.0", "Module.emb.Embedding.forward.0"]}
        for step, nodes in want.items():
            with open(os.path.join(top, "step%d" % step, PROC, "construct.json")) as f:
                con = json.load(f)
            self.assertEqual(list(con), nodes, step)
            self.assertEqual(con["Module.b0.lin.Linear.forward.0"], "Module.b0.Blk.forward.0")

    def test_tree_files_linked_between_steps(self):
        """A step whose tree files have the text of the last ones written names those files
        again (one inode, its bytes as written); a file put in their place, however alike,
        is never named: the step's own is written."""
        top = helpers.tmpdir("msp-tree-link")
        model = Net()
        ids = torch.tensor([[1, 2, 3]])

        def path(step, name="construct.json"):
            return os.path.join(top, "step%d" % step, PROC, name)

        with adump.torch.capture(model, top, format="msprobe", content="stats") as cap:
            for step in range(4):
                model(ids)
                cap.step()
                if step == 1:
                    self.assertEqual(os.stat(path(1)).st_ino, os.stat(path(0)).st_ino)
                    # the kept file replaced by another of the same size
                    with open(path(0), "rb") as f:
                        text = f.read()
                    os.unlink(path(0))
                    with open(path(0), "wb") as f:
                        f.write(text.replace(b"Module", b"Xodule"))
        self.assertEqual(cap.losses, [])
        ino = [os.stat(path(s)).st_ino for s in range(4)]
        self.assertNotIn(ino[2], (ino[0], ino[1]))  # not the file put there: its own
        self.assertEqual(ino[3], ino[2])           # the new one named again
        for step in (1, 2, 3):
            with open(path(step)) as f:
                con = json.load(f)
            self.assertEqual(con["Module.b0.lin.Linear.forward.0"], "Module.b0.Blk.forward.0")
            self.assertEqual(os.stat(path(step, "stack.json")).st_ino,
                             os.stat(path(1, "stack.json")).st_ino)
        self.assertGreaterEqual(os.stat(path(3, "stack.json")).st_nlink, 4)

    def test_tree_files_never_follow_a_link(self):
        """construct.json goes through construct.json.tmp: a link planted there is refused
        (a write_error loss), the file it points to left as it was."""
        top = helpers.tmpdir("msp-link")
        victim = os.path.join(helpers.tmpdir("msp-link-victim"), "victim")
        with open(victim, "w") as f:
            f.write("mine")
        model = Net()
        with adump.torch.capture(model, top, format="msprobe", content="stats") as cap:
            model(torch.tensor([1, 2]))
            d = os.path.join(top, "step0", PROC)
            os.symlink(victim, os.path.join(d, "construct.json.tmp"))
            cap.step()
        with open(victim) as f:
            self.assertEqual(f.read(), "mine")
        self.assertEqual([x.cause for x in cap.losses], ["write_error"])
        self.assertIn("construct.json", cap.losses[0].name)
        self.assertFalse(os.path.exists(os.path.join(d, "construct.json")))
        self.assertTrue(os.path.isfile(os.path.join(d, "stack.json")))

    def test_format_msprobe_op_level(self):
        # op level, written by the pipeline: every .pt loads with weights_only and matches
        # its description; fc's addmm output equals what a hook saw of fc's output
        cap = helpers.tmpdir("msp-fmt-op")
        seen = run(cap, steps=1, level="op", format="msprobe", md5=True)
        d = os.path.join(cap, "step0", PROC)
        self.assertEqual(sorted(os.listdir(d)), ["construct.json", "dump.json",
                                                 "dump_tensor_data", "stack.json"])
        with open(os.path.join(d, "dump.json")) as f:
            doc = json.load(f)
        self.assertEqual((doc["task"], doc["level"]), ("tensor", "L1"))
        data = doc["data"]
        with open(os.path.join(d, "construct.json")) as f:
            con = json.load(f)
        self.assertTrue(all(n.startswith(("Aten.", "Distributed.")) for n in data), list(data))
        n = 0
        for name, entry in data.items():
            for t in tensors_of(entry):
                if "data_name" not in t:
                    continue
                v = torch.load(os.path.join(d, "dump_tensor_data", t["data_name"]),
                               weights_only=True)
                self.assertEqual((str(v.dtype), list(v.shape)), (t["dtype"], t["shape"]), name)
                self.assertEqual(t["md5"], "%08x" % zlib.crc32(v.numpy().tobytes()), name)
                if v.numel() and v.dtype != torch.bool:
                    self.assertEqual(float(v.max()), float(t["Max"]), name)
                n += 1
        self.assertGreater(n, 20)
        fc = [k for k, parent in con.items() if parent == "Module.fc.Linear.forward.0" and
              k.startswith("Aten.addmm") and k.endswith(".forward")]
        self.assertEqual(len(fc), 1, con)
        out = torch.load(os.path.join(d, "dump_tensor_data", fc[0] + ".output.0.pt"),
                         weights_only=True)
        want = seen["Module.fc.Linear.forward.0"]          # [2, 3, 2]: addmm's is [6, 2]
        self.assertTrue(torch.equal(out.reshape(want.shape), want))
        # the dumps' order is the model's: the forward addmm of fc after b0's
        names = [k for k in data if k.startswith("Aten.addmm") and k.endswith(".forward")]
        self.assertEqual(names[-1], fc[0])

    def test_data_mode(self):
        # The side not dumped is left out of each entry, as msprobe's data_mode does.
        for mode, gone, kept in (("input", "output", "input_args"),
                                 ("output", "input_args", "output")):
            cap = helpers.tmpdir("msp-dm-" + mode)
            run(cap, steps=1, format="msprobe", data_mode=mode)
            d = os.path.join(cap, "step0", PROC)
            data = json.load(open(os.path.join(d, "dump.json")))["data"]
            fc = data["Module.fc.Linear.forward.0"]
            self.assertNotIn(gone, fc, mode)
            self.assertIn(kept, fc, mode)
            for t in fc[kept][:1]:
                self.assertTrue(os.path.exists(os.path.join(d, "dump_tensor_data",
                                                            t["data_name"])), mode)

    def test_scalar_statistics(self):
        # A 0-d tensor's four statistics are its value, in its own type (msprobe's rule).
        class Reduce(nn.Module):
            def forward(self, x):
                return x.sum(), x.argmax(), x.double().sum(1)

        class Top(nn.Module):
            def __init__(self):
                super().__init__()
                self.r = Reduce()

            def forward(self, x):
                return self.r(x)

        x = torch.tensor([[1.5, -2.0, 4.25], [0.5, 3.0, -1.0]])
        for content in ("tensor", "stats"):
            cap = helpers.tmpdir("msp-scalar-" + content)
            m = Top()
            with adump.torch.capture(m, cap, format="msprobe", content=content) as c:
                m(x)
                c.step()
            with open(os.path.join(cap, "step0", PROC, "dump.json")) as f:
                out = json.load(f)["data"]["Module.r.Reduce.forward.0"]["output"]
            stats = [[o[k] for k in ("Max", "Min", "Mean", "Norm")] for o in out]
            self.assertEqual(stats[0], [6.25] * 4, content)
            self.assertEqual(stats[1], [2] * 4, content)
            self.assertEqual([type(v) for v in stats[1]], [int] * 4, content)
            self.assertEqual(stats[2], [3.75, 2.5, None, None], content)

    def test_statistics(self):
        cap = helpers.tmpdir("msp-stats")
        run(cap, content="stats", format="msprobe")
        d = os.path.join(cap, "step0", PROC)
        self.assertFalse(os.path.exists(os.path.join(d, "dump_tensor_data")))
        doc = json.load(open(os.path.join(d, "dump.json")))
        self.assertEqual(doc["task"], "statistics")
        self.assertIsNone(doc["dump_data_dir"])
        self.assertEqual(sorted(doc["data"]), sorted(EXPECTED))
        t = doc["data"]["Module.emb.Embedding.forward.0"]["input_args"][0]
        self.assertEqual((t["dtype"], t["shape"], t["Max"], t["Min"]),
                         ("torch.int64", [2, 3], 9, 1))
        self.assertNotIn("data_name", t)
        # msprobe's rule: Mean and Norm of floating tensors (but float64) only
        self.assertEqual((t["Mean"], t["Norm"]), (None, None))
        blk = doc["data"]["Module.b0.Blk.forward.0"]
        self.assertEqual(blk["input_kwargs"]["scale"], {"type": "float", "value": 2.0})
        self.assertEqual(blk["input_kwargs"]["mask"]["Max"], 1.0)
        self.assertNotIn("data_name", blk["input_kwargs"]["mask"])

    def test_statistics_of_a_tensor_dumped_again(self):
        # A tensor dumped again (a Sequential's output is its last child's, which is the next
        # call's input) has its statistics copied, not read again (stats_keys): they must be
        # the tensor's at each dump, so a change in place between two dumps of the same
        # object (ReLU(inplace=True) on the Linear's output) shows, and every entry equals
        # what torch computes from a copy taken by a plain hook at that moment.
        torch.manual_seed(0)
        model = nn.Sequential(nn.Sequential(nn.Linear(4, 8), nn.ReLU(inplace=True)),
                              nn.Linear(8, 2))
        seen = {}

        def keep_in(name):
            def hook(mod, args):
                seen[name] = [args[0].detach().clone()]
            return hook

        def keep_out(name):
            def hook(mod, args, out):
                seen[name].append(out.detach().clone())
            return hook
        for name, mod in model.named_modules():
            if name:
                mod.register_forward_pre_hook(keep_in(name))
                mod.register_forward_hook(keep_out(name))
        cap = helpers.tmpdir("msp-again")
        with adump.torch.capture(model, cap, content="stats", format="msprobe",
                                 backward=False) as c:
            x = torch.randn(3, 4)
            model(x)
            c.step()
        data = json.load(open(os.path.join(cap, "step0", PROC, "dump.json")))["data"]
        names = {"0.0": "Module.0.0.Linear.forward.0", "0.1": "Module.0.1.ReLU.forward.0",
                 "0": "Module.0.Sequential.forward.0", "1": "Module.1.Linear.forward.0"}
        for key, entry in names.items():
            got_in, got_out = seen[key]
            for t, want in ((data[entry]["input_args"][0], got_in),
                            (data[entry]["output"][0], got_out)):
                self.assertEqual((t["Max"], t["Min"]),
                                 (want.max().item(), want.min().item()), entry)
        lin_out = data["Module.0.0.Linear.forward.0"]["output"][0]
        relu_out = data["Module.0.1.ReLU.forward.0"]["output"][0]
        self.assertLess(lin_out["Min"], 0)         # before the ReLU changed it in place
        self.assertEqual(relu_out["Min"], 0.0)

    def test_bad_input(self):
        # a dump whose dfx_message is not JSON, or names a tensor it does not hold: a clear
        # error naming the file, exit status 1, the capture untouched
        for dfx in ("not json", '{"input_args": [{"type": "torch.Tensor", "tensor": "input.7"}]}'):
            top = helpers.tmpdir("msp-bad")
            with adump.Session(top) as s:
                st = s.stream()
                st.dump("Linear", "Module.x.Linear.forward.0",
                        inputs=[np.ones((2, 2), np.float32)], dfx_message=dfx)
            before = helpers.files_below(top)
            code, text = helpers.tool("export", "--msprobe", top, helpers.tmpdir("msp-bad-out"))
            self.assertEqual(code, 1, text)
            self.assertIn("Module_x_Linear_forward_0", text)
            self.assertIn("dfx_message", text)
            self.assertEqual(helpers.files_below(top), before)

    def test_op_level(self):
        cap = helpers.tmpdir("msp-op")
        out = helpers.tmpdir("msp-op-out")
        run(cap, steps=1, level="op")
        code, text = helpers.tool("export", "--msprobe", cap, out)
        self.assertEqual(code, 0, text)
        d = os.path.join(out, "step0", "rank0")
        data = json.load(open(os.path.join(d, "dump.json")))["data"]
        con = json.load(open(os.path.join(d, "construct.json")))
        aten = [n for n in data if n.startswith("Aten.")]
        self.assertTrue(aten)
        mm = [n for n in aten if n.startswith("Aten.addmm") and n.endswith(".forward")]
        self.assertTrue(mm, aten)
        self.assertIn(con[mm[0]], ("Module.b0.lin.Linear.forward.0",
                                   "Module.fc.Linear.forward.0"))
        for name, entry in data.items():
            for t in tensors_of(entry):
                if "data_name" in t:
                    v = torch.load(os.path.join(d, "dump_tensor_data", t["data_name"]),
                                   weights_only=True)
                    self.assertEqual(list(v.shape), t["shape"], name)


if __name__ == "__main__":
    unittest.main(verbosity=2)
