# SPDX-License-Identifier: Apache-2.0
"""How adump.torch hands tensors to the native dump (python/src/tensors.c, stream.c): the
statistics keys (_adump._StatsKeys: the same key for the same tensor object at the same
version and data pointer while it lives and is among the last HOST_STATS_REUSE keyed; none
for a parameter), and dump(direct=True), which takes CPU tensors of torch's own types and
dtypes (bfloat16 by its bytes) as they are and does nothing, returning None, when one is
not. A module-level capture whose tensors go that way writes what the general path
writes. Exits 77 without torch."""
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
    print("test_torch_handover: torch is not installed (python3-torch): skipped")
    sys.exit(77)

import adump  # noqa: E402
import adump.torch  # noqa: E402,F401  (registers the torch types with the native module)
from adump import _adump  # noqa: E402


class StatsKeys(unittest.TestCase):
    def test_same_object_same_key(self):
        k = _adump._StatsKeys()
        a, b = torch.ones(4), torch.ones(4)
        ka = k.key(a)
        self.assertGreater(ka, 0)
        self.assertEqual(k.key(a), ka)
        self.assertNotIn(k.key(b), (0, ka))
        a.add_(1)                               # a new version: new bytes
        self.assertNotIn(k.key(a), (0, ka))

    def test_data_replaced(self):
        k = _adump._StatsKeys()
        a = torch.ones(4)
        ka = k.key(a)
        a.data = torch.zeros(4)                 # same object, no version bump, new memory
        self.assertNotEqual(k.key(a), ka)

    def test_parameter_has_none(self):
        k = _adump._StatsKeys()
        self.assertEqual(k.key(nn.Parameter(torch.ones(2))), 0)

    def test_oldest_forgotten(self):
        k = _adump._StatsKeys()
        ts = [torch.ones(1) for _ in range(_adump.HOST_STATS_REUSE + 1)]
        first = [k.key(t) for t in ts[:-1]]
        self.assertEqual(len(set(first)), len(first))
        self.assertEqual(k.key(ts[1]), first[1])       # known: no change
        k.key(ts[-1])                                   # replaces the oldest, ts[0]'s
        self.assertNotEqual(k.key(ts[0]), first[0])
        self.assertEqual(k.key(ts[2]), first[2])

    def test_bad_argument(self):
        with self.assertRaises(AttributeError):
            _adump._StatsKeys().key(3)
        with self.assertRaises(TypeError):
            _adump._StatsKeys(1)


class Direct(unittest.TestCase):
    def setUp(self):
        self.top = helpers.tmpdir("handover")

    def test_taken_or_nothing_done(self):
        with adump.Session(self.top, content="stats", workers=1, time_dir="t") as s:
            st = s.stream()
            keys = _adump._StatsKeys()
            x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
            self.assertIsNotNone(st._st.dump("Op", "plain", [x], [x.t()], True,
                                             stats_keys=keys, direct=True))
            self.assertIsNotNone(st._st.dump("Op", "half", [], [x.to(torch.bfloat16)], True,
                                             stats_keys=keys, direct=True))

            class Sub(torch.Tensor):
                pass
            # Not taken as they are: nothing done, whichever tensor it is
            for other in (x.numpy(), torch.ones(2).to_sparse(), torch.ones(2).as_subclass(Sub),
                          torch.ones(2, dtype=torch.complex64),
                          torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.qint8)):
                self.assertIsNone(st._st.dump("Op", "other", [x], [other], True,
                                              stats_keys=keys, direct=True), repr(other))
            # A _StatsKeys keys direct dumps only (the general path hands over its keys)
            with self.assertRaises(TypeError):
                st._st.dump("Op", "keyed", [x], [], True, stats_keys=keys)
            st.sync()
            self.assertEqual(st.stats()["dumps"], 2)
        got = {d.op_name: d for d in adump.walk(self.top)}
        self.assertEqual(sorted(got), ["half", "plain"])
        # x and its transpose (made contiguous): the same values
        self.assertEqual([r["Max Value"] for r in got["plain"].stats], [5, 5])
        self.assertEqual([r["Max Value"] for r in got["half"].stats], [5])


    def test_strided_gathered(self):
        """A strided tensor of a copying direct dump is gathered into the stream's reused
        buffers (python/src/tensors.c), not copied by torch: transposed, permuted, stepped,
        offset, expanded (stride 0), 0-d, each element width; every value as
        contiguous() has it. Past the buffers' count (PYADUMP_SCRATCH_SLOTS, 8) torch
        copies the rest; a zero-copy dump never uses them."""
        base = torch.arange(120, dtype=torch.float64).reshape(2, 3, 4, 5)
        many = [base.permute(3, 1, 0, 2), base[:, 1:, ::2, 3:], base.to(torch.int16).mT,
                base.to(torch.uint8)[1, :, ::3], (base > 40).transpose(0, 2),
                torch.tensor(3.5).expand(4, 5), base.to(torch.float32)[:, :, :1, :].mT,
                torch.arange(3.0).expand(2, 3).t()]
        more = [base.to(torch.int32).transpose(1, 3), base[..., ::4]]
        self.assertFalse(any(t.is_contiguous() for t in many + more))
        copies = []
        contiguous = torch.Tensor.contiguous

        def counted(t, *a, **k):
            copies.append(tuple(t.shape))
            return contiguous(t, *a, **k)
        torch.Tensor.contiguous = counted
        try:
            with adump.Session(self.top, workers=1, time_dir="t") as s:
                st = s.stream()
                st._st.dump("Op", "eight", many, [], True, direct=True)
                self.assertEqual(copies, [])
                st._st.dump("Op", "ten", many, more, True, direct=True)
                self.assertEqual(copies, [tuple(t.shape) for t in more])
                del copies[:]
                st._st.dump("Op", "again", [], more, True, direct=True)
                self.assertEqual(copies, [])        # the buffers taken before, reused
                st._st.dump("Op", "zero-copy", [], more[:1], False, direct=True)
                self.assertEqual(copies, [tuple(more[0].shape)])
                st.sync()
        finally:
            torch.Tensor.contiguous = contiguous
        got = {d.op_name: d for d in adump.walk(self.top)}
        self.assertEqual(sorted(got), ["again", "eight", "ten", "zero-copy"])
        for name, want in (("eight", many), ("ten", many + more), ("again", more),
                           ("zero-copy", more[:1])):
            d = got[name]
            arrays = list(d.inputs) + list(d.outputs)
            self.assertEqual(len(arrays), len(want), name)
            for i, (g, w) in enumerate(zip(arrays, want)):
                w = w.contiguous().numpy()
                self.assertEqual(np.asarray(g).dtype, w.dtype, (name, i))
                self.assertEqual(np.asarray(g).shape, w.shape, (name, i))
                np.testing.assert_array_equal(np.asarray(g), w, err_msg="%s %d" % (name, i))

def _model(dtype):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(dtype)


def _run(top, direct, dtype=torch.float32, **kw):
    """One captured step of _model(); with @direct False every dump takes the general path
    (_dump_any, as a dump with a tensor the native dump does not take directly does)."""
    model = _model(dtype)
    x = torch.randn(3, 8, generator=torch.Generator().manual_seed(1)).to(dtype)
    with adump.torch.capture(model, top, level="module", format="msprobe", **kw) as cap:
        general = cap._dump_any
        cap.general_dumps = 0

        def counted(*a):
            cap.general_dumps += 1
            return general(*a)
        cap._dump_any = counted
        if not direct:
            cap._direct = False         # as if the native dump refused every dump
        model(x).sum().backward()
        if cap.window:
            cap.persist("the held step, written")
        cap.step()
    return cap


def _tree(top):
    out = {}
    for path in helpers.files_below(top):
        with open(path, "rb") as f:
            out[os.path.relpath(path, top)] = f.read()
    return out


def _assert_same_files(test, a, fa, b, fb):
    """The trees @fa (of @a) and @fb (of @b), _tree()'s, hold the same files and bytes but
    the time a trigger fired (dump.json names its dump_tensor_data by its absolute path)."""
    test.assertEqual(sorted(fa), sorted(fb))
    for name in fa:
        if not name.endswith("trigger.json"):
            test.assertEqual(fa[name].replace(a.encode(), b"<top>"),
                             fb[name].replace(b.encode(), b"<top>"), name)


class SameFiles(unittest.TestCase):
    """The direct path writes, file for file and byte for byte, what the general path
    writes (msprobe's format: its names and dump.json hold no time)."""

    def check(self, **kw):
        a, b = helpers.tmpdir("direct"), helpers.tmpdir("general")
        cap = _run(a, True, **kw)
        gen = _run(b, False, **kw)
        self.assertGreater(cap.dumps, 0)
        self.assertEqual(cap.general_dumps, 0)          # every dump went direct
        self.assertEqual(gen.general_dumps, cap.dumps)
        fa, fb = _tree(a), _tree(b)
        self.assertTrue(any(n.endswith("dump.json") for n in fa), sorted(fa))
        if kw.get("window_steps") or kw.get("content") != "stats":
            self.assertTrue(any(n.endswith(".pt") for n in fa), sorted(fa))
        if kw.get("dtype") is torch.bfloat16:
            self.assertIn(b"torch.bfloat16", b"".join(fa.values()))
        _assert_same_files(self, a, fa, b, fb)

    def test_stats(self):
        self.check(content="stats")

    def test_tensors(self):
        self.check()

    def test_window(self):
        self.check(window_steps=2)

    def test_bfloat16(self):
        # bfloat16 goes direct by its bytes; the general path through numpy's int16
        self.check(dtype=torch.bfloat16)
        self.check(dtype=torch.bfloat16, content="stats")


class LeanChunks(unittest.TestCase):
    """A capture that hands over no bytes (content="stats", window mode) stages 256 KiB
    chunks unless chunk_bytes is given (more records a stream before its worker must wake):
    what it writes, a persisted window of tensors larger than a chunk too, is what the
    2 MiB default writes."""

    def run_big(self, top, **kw):
        torch.manual_seed(3)
        model = nn.Sequential(nn.Linear(256, 512), nn.ReLU())
        x = torch.randn(300, 256, generator=torch.Generator().manual_seed(2))
        with adump.torch.capture(model, top, level="module", format="msprobe", **kw) as cap:
            for _ in range(2):
                model(x).sum().backward()
                if cap.window:
                    cap.persist("the held steps, written")
                cap.step()
        return cap

    def check(self, **kw):
        a, b = helpers.tmpdir("lean"), helpers.tmpdir("default")
        lean = self.run_big(a, **kw)
        full = self.run_big(b, chunk_bytes=2 << 20, **kw)
        self.assertEqual(lean.config["chunk_bytes"], 256 << 10)
        self.assertEqual(full.config["chunk_bytes"], 2 << 20)
        self.assertEqual(lean.losses, [])
        fa, fb = _tree(a), _tree(b)
        big = [n for n in fa if n.endswith(".pt") and len(fa[n]) > (256 << 10)]
        if kw.get("window_steps"):
            self.assertTrue(big, sorted(fa))            # written in several chunks
        _assert_same_files(self, a, fa, b, fb)

    def test_stats(self):
        self.check(content="stats")

    def test_window(self):
        self.check(window_steps=2)

    def test_tensors_keep_the_default(self):
        top = helpers.tmpdir("tensors")
        self.assertNotIn("chunk_bytes", self.run_big(top).config)
        top = helpers.tmpdir("md5")
        self.assertNotIn("chunk_bytes", self.run_big(top, content="stats", md5=True).config)


if __name__ == "__main__":
    unittest.main()
