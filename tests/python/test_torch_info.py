# SPDX-License-Identifier: Apache-2.0
"""What adump.torch records about a call beside its tensors (_torch_info.describe, the
dfx_message a msprobe-format dump.json is made from): non-tensor values as msprobe's dump
describes them, so adump's and msprobe's entries have the same rows (None is null, not an
item of its own; slices, torch.Size, dtypes and devices passed by keyword, namedtuples, numpy
scalars, ReduceOp by its operation); and the torch.distributed collectives in msprobe's
shape (_torch_dist.describe_call/describe_result): non-tensor arguments kept, buffers a
collective only writes into null among the inputs and not dumped, the output being the
arguments after the call. Needs neither msprobe nor a process group. Exits 77 without
torch."""
import collections
import json
import math
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("test_torch_info: torch is not installed (python3-torch): skipped")
    sys.exit(77)

import adump  # noqa: E402
import adump.torch  # noqa: E402
from adump._torch_dist import describe_call, describe_result  # noqa: E402
from adump._torch_info import _describe_py, describe, to_json  # noqa: E402


def desc(obj, key=None):
    tensors = []
    return describe(obj, tensors, "input", None, key), tensors


class NonTensors(unittest.TestCase):
    def test_values(self):
        for obj, want in (
                (None, None),
                (True, {"type": "bool", "value": True}),
                (3, {"type": "int", "value": 3}),
                (2.5, {"type": "float", "value": 2.5}),
                (float("-inf"), {"type": "float", "value": float("-inf")}),
                ("sum", {"type": "str", "value": "sum"}),
                (slice(1, None, 2), {"type": "slice", "value": [1, None, 2]}),
                (Ellipsis, {"type": "ellipsis", "value": "..."}),
                (torch.Size([2, 3]), {"type": "torch.Size", "value": [2, 3]}),
                (torch.channels_last, {"type": "torch.memory_format",
                                       "format": "channels_last"}),
                (np.float32(1.5), {"type": "float32", "value": 1.5}),
                (np.int64(7), {"type": "int64", "value": 7}),
                (torch.float16, {}),                # a dtype passed other than as dtype=
                (torch.device("cpu"), {}),
                (object(), None),                   # a type msprobe does not describe
                (torch.strided, None)):
            self.assertEqual(desc(obj)[0], want, repr(obj))

    def test_non_finite_json(self):
        """Non-finite floats are JSON numbers, as msprobe writes them: msprobe compare refuses
        a dump.json holding a string that starts with "-" (its CSV-injection guard)."""
        text = to_json(describe([float("-inf"), float("nan"), np.float32("inf")], [], "input"))
        self.assertEqual(text, '[{"type":"float","value":-Infinity},'
                               '{"type":"float","value":NaN},'
                               '{"type":"float32","value":Infinity}]')
        self.assertTrue(math.isnan(json.loads(text)[1]["value"]))

    def test_keyed(self):
        # msprobe reads the keyword arguments dtype, output_dtype and device by their name.
        self.assertEqual(desc(torch.float16, "dtype")[0],
                         {"type": "torch.dtype", "value": "torch.float16"})
        self.assertEqual(desc(torch.int8, "output_dtype")[0],
                         {"type": "torch.dtype", "value": "torch.int8"})
        self.assertEqual(desc(torch.device("cpu"), "device")[0],
                         {"type": "torch.device", "value": "cpu:None"})
        self.assertEqual(desc("cpu", "device")[0], {"type": "torch.device", "value": "cpu"})
        self.assertIsNone(desc(None, "dtype")[0])
        got = desc({"dtype": torch.float32, "device": "cpu", "scale": None, "n": 2})[0]
        self.assertEqual(got, {"dtype": {"type": "torch.dtype", "value": "torch.float32"},
                               "device": {"type": "torch.device", "value": "cpu"},
                               "scale": None, "n": {"type": "int", "value": 2}})

    def test_nested(self):
        Pair = collections.namedtuple("Pair", "a b")
        t = torch.ones(2, requires_grad=True)
        got, tensors = desc([Pair(t, None), (1, {"k": t * 2})])
        self.assertEqual(got[0]["a"]["tensor"], "input.0")
        self.assertIsNone(got[0]["b"])
        self.assertEqual(got[1][0], {"type": "int", "value": 1})
        self.assertEqual(got[1][1]["k"]["tensor"], "input.1")
        self.assertEqual(len(tensors), 2)
        self.assertIs(tensors[0], t)

    def test_reduce_op(self):
        dist = getattr(torch, "distributed", None)
        if dist is None or not dist.is_available():
            self.skipTest("torch.distributed is not available")
        a = desc(dist.ReduceOp.MAX)[0]
        b = desc(dist.ReduceOp.MAX)[0]
        self.assertEqual(a["type"], "torch.distributed.ReduceOp")
        self.assertIn("MAX", a["value"])        # the operation, not an object's address
        self.assertNotIn(" at 0x", a["value"])
        self.assertEqual(a, b)


class FastPaths(unittest.TestCase):
    """describe() is C for the common values (_adump._describe), _describe_py() for the rest;
    _same_json() decides whether a dump's last dfx_message text is reused."""

    def test_describe_c_is_the_reference(self):
        Pair = collections.namedtuple("Pair", "a b")

        class Sub(torch.Tensor):
            pass

        class Keys(dict):
            pass

        t = torch.ones(2, 3, requires_grad=True)
        p = nn.Parameter(torch.zeros(4))
        values = [
            t, p, t.detach().to(torch.bfloat16), torch.arange(3), torch.zeros(2, 2).t(),
            torch.zeros(1, dtype=torch.complex64), torch.zeros(2, dtype=torch.uint8) > 0,
            torch.zeros(3).to_sparse(), torch.quantize_per_tensor(torch.ones(2), 0.1, 0,
                                                                  torch.quint8),
            torch.zeros(2, dtype=torch.int8).view(torch.uint8), t.as_subclass(Sub),
            None, 1, 2.5, -0.0, "s", [t, [p, None]], (t, 1), Pair(t, (p,)),
            {"a": t, 3: [p], None: {"dtype": torch.float16}}, Keys(x=t),
            torch.Size([2]), slice(1, 2), {"device": "cpu", "dtype": torch.int8}, [], {}, (),
        ]
        for kind in ("input", "output"):
            for v in values:
                for key in (None, "dtype"):
                    got_t, got_s, ref_t, ref_s = [], [], [], []
                    got = describe(v, got_t, kind, got_s, key)
                    ref = _describe_py(v, ref_t, kind, ref_s, key)
                    self.assertEqual(to_json(got), to_json(ref), repr(v))
                    self.assertEqual([id(x) for x in got_t], [id(x) for x in ref_t])
                    self.assertEqual(got_s, ref_s)
        # Skipped tensors are counted among all of their kind, as the reference counts them.
        skipped = []
        describe([torch.ones(1), torch.zeros(2).to_sparse(), torch.ones(1)], [], "input",
                 skipped)
        self.assertEqual([s[:2] for s in skipped], [("input", 1)])
        with self.assertRaises(TypeError):
            describe(t, (), "input")        # tensors must be a list
        loop = [t]
        loop.append(loop)
        with self.assertRaises(RecursionError):
            describe(loop, [], "input")

    def test_same_json(self):
        same = adump._adump._same_json
        nan = float("nan")
        for a, b in ((1, 1), (nan, nan), ({"a": [1, (2.5, None)]}, {"a": [1, (2.5, None)]}),
                     ("x", "x"), (True, True), (None, None)):
            self.assertTrue(same(a, b), (a, b))
            self.assertEqual(to_json(a), to_json(b))
        for a, b in ((1, 1.0), (1, True), (0.0, -0.0), ([1], (1,)), ({"a": 1, "b": 2},
                     {"b": 2, "a": 1}), ({"a": 1}, {"a": 1, "b": 2}), ([1, 2], [1]),
                     (collections.OrderedDict(a=1), {"a": 1}), (2 ** 70, 2 ** 70 + 1)):
            self.assertFalse(same(a, b), (a, b))
            self.assertTrue(to_json(a) != to_json(b) or type(a) is not type(b), (a, b))

    def test_dfx_text_follows_the_values(self):
        """A call described as in the last step reuses that step's text; a value that compares
        equal but encodes otherwise (-0.0 after 0.0, True after 1) gets its own."""
        class Scale(nn.Module):
            def forward(self, x, s):
                return x * s

        class Top(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = Scale()

            def forward(self, x, s):
                return self.scale(x, s)

        top = helpers.tmpdir("torch-info-dfx")
        model = Top()
        args = [0.0, -0.0, -0.0, 1, True, 2.5]
        with adump.torch.capture(model, top, backward=False) as cap:
            for s in args:
                model(torch.ones(2), s)
                cap.step()
        self.assertEqual(cap.losses, [])
        for step, s in enumerate(args):
            d = {x.op_name: x for x in adump.walk(os.path.join(top, "step%d" % step))}
            text = d["Module.scale.Scale.forward.0"].dfx_message
            self.assertIn(to_json(describe(s, [], "input")), text, (step, s))


class Collectives(unittest.TestCase):
    def test_all_gather(self):
        outs = [torch.zeros(2), torch.zeros(2)]
        t = torch.tensor([1.0, 2.0])
        inputs, outputs = [], []
        info = describe_call("all_gather", (outs, t), {"async_op": False}, inputs)
        # The list the collective fills is no input: null, and not dumped.
        self.assertIsNone(info["input_args"][0])
        self.assertEqual(info["input_args"][1]["tensor"], "input.0")
        self.assertEqual(info["input_kwargs"], {"async_op": {"type": "bool", "value": False}})
        self.assertEqual(len(inputs), 1)
        self.assertIs(inputs[0], t)
        out = describe_result("all_gather", (outs, t), {"async_op": False}, outputs)
        self.assertEqual([[o["tensor"] for o in out[0]], out[1]["tensor"], out[2]],
                         [["output.0", "output.1"], "output.2",
                          {"type": "bool", "value": False}])
        self.assertEqual([id(x) for x in outputs], [id(outs[0]), id(outs[1]), id(t)])

    def test_broadcast_keywords(self):
        b = torch.arange(3.0)
        inputs, outputs = [], []
        info = describe_call("broadcast", (b,), {"src": 1}, inputs)
        self.assertEqual(info["input_kwargs"], {"src": {"type": "int", "value": 1}})
        out = describe_result("broadcast", (b,), {"src": 1}, outputs)
        self.assertEqual(out[0]["tensor"], "output.0")
        self.assertEqual(out[1], {"type": "int", "value": 1})

    def test_point_to_point(self):
        t = torch.ones(3)
        inputs, outputs = [], []
        info = describe_call("irecv", (), {"tensor": t, "src": 0}, inputs)
        self.assertIsNone(info["input_kwargs"]["tensor"])
        self.assertEqual(inputs, [])
        out = describe_result("isend", (t, 1), {}, outputs)
        self.assertIsNone(out[0])               # what isend sends is no output of it
        self.assertEqual(outputs, [])
        out = describe_result("irecv", (), {"tensor": t, "src": 0}, outputs)
        self.assertEqual(out[0]["tensor"], "output.0")


class Gate(nn.Module):
    def forward(self, x, flag, extra=None, how="sum", dtype=None):
        y = torch.where(flag, x, -x)
        return y.sum(1) if how == "sum" else y


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = Gate()

    def forward(self, x):
        return self.gate(x, x > 0, extra=None, how="sum", dtype=torch.float32)


class Captured(unittest.TestCase):
    def test_module_kwargs(self):
        """A capture's dfx_message holds the keyword arguments as msprobe writes them."""
        top = helpers.tmpdir("torch-info")
        model = Outer()
        with adump.torch.capture(model, top, backward=False) as cap:
            model(torch.randn(2, 3))
        self.assertEqual(cap.losses, [])
        d = {x.op_name: x for x in adump.walk(os.path.join(top, "step0"))}
        info = json.loads(d["Module.gate.Gate.forward.0"].dfx_message)
        self.assertEqual(info["input_kwargs"], {
            "extra": None, "how": {"type": "str", "value": "sum"},
            "dtype": {"type": "torch.dtype", "value": "torch.float32"}})
        self.assertEqual(info["input_args"][1]["dtype"], "torch.bool")


if __name__ == "__main__":
    unittest.main()
