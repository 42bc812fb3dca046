# SPDX-License-Identifier: Apache-2.0
"""Issue 32, the flight recorder from Python: adump.Session's window keys and methods, and
adump.torch.capture(window_steps=N). Small models no other test uses (window_helpers.py: a
3-layer MLP, a tiny conv net) train a few steps with a NaN or a large value planted at a
chosen step, through the data or a forward hook; the optimizer skips that step's update (a
bad batch), so the steps after it are clean again. Checked: every step's statistics are on
disk; the window directory holds exactly the window's steps, equal file by file to a full
tensor capture of the same run (content="tensor", no window) restricted to those steps (CANN:
the dump files' bytes, header and tensors, with the two fields that differ between any two
runs, the dump time and the tensor's address, set aside, and each window file named as its
statistics file; msprobe: dump.json with the run's own directory set aside, construct.json,
stack.json and every .pt byte for byte); trigger.json names the step, tensor and rule; `adump
scan` on the window names the origin op; a clean run writes no window and the same statistics
as a content="stats" capture without window; the exception trigger (the step's remaining
dumps taken first), cap.persist, a note for one window only; bad configuration; the signal
trigger. Two gloo ranks and RSS: test_window_dist.py. Exits 77 without torch."""
import faulthandler
import json
import os
import shutil
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

try:
    import torch
    import torch.nn as nn  # noqa: F401
except ImportError:
    print("test_window: torch is not installed (python3-torch): skipped")
    sys.exit(77)

import adump  # noqa: E402
import adump.torch  # noqa: E402
from window_helpers import (MLP, DataSwap, Residual, ResidualAlways,  # noqa: E402
                            TinyConv, cann_csv_key, cann_key, cann_normal, files_of, train)


class Window(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.top = helpers.tmpdir("window")
        # A test that hangs (a deadlock between a window's lock and the GIL) ends the run
        # with every thread's traceback instead of waiting for ctest's timeout.
        faulthandler.dump_traceback_later(120, exit=True)

    def tearDown(self):
        faulthandler.cancel_dump_traceback_later()

    def path(self, name):
        return os.path.join(self.top, name)

    def trigger(self, root, step, rank_dir):
        with open(os.path.join(root, "step%d" % step, rank_dir, "trigger.json")) as f:
            return json.load(f)

    def assert_cann_window(self, cap, full, steps, rank_dir="rank0"):
        """The window of @cap holds exactly @steps, equal to @full's, each file named as
        its statistics file."""
        root = cap.windows[-1]
        self.assertEqual(sorted(e for e in os.listdir(root)),
                         sorted("step%d" % s for s in steps))
        for s in steps:
            wdir = os.path.join(root, "step%d" % s, rank_dir, "0")
            fdir = os.path.join(full, "step%d" % s, rank_dir, "0")
            sdir = os.path.join(cap.dump_path, "step%d" % s, rank_dir, "0")
            self.assertEqual(sorted(os.listdir(os.path.join(root, "step%d" % s, rank_dir))),
                             ["0", "trigger.json"])
            wfiles = {cann_key(n): n for n in os.listdir(wdir)}
            ffiles = {cann_key(n): n for n in os.listdir(fdir)}
            self.assertEqual(sorted(wfiles), sorted(ffiles), s)
            self.assertTrue(wfiles)
            stats = set(os.listdir(sdir))
            for k, name in wfiles.items():
                self.assertIn(name + ".csv", stats)
                w = cann_normal(os.path.join(wdir, name))
                f = cann_normal(os.path.join(fdir, ffiles[k]))
                self.assertEqual(w[0], f[0], name)
                self.assertTrue(w[1] == f[1], "%s: tensor bytes differ" % name)

    def assert_zero_copy_windows_whole(self, model, persist_at, **kw):
        """Windows of steps 0 and 2 (held by reference where they can be), without loss,
        equal to a tensor capture of the same run."""
        cap = train(self.path("win"), model, persist_at=persist_at, window_steps=2,
                    zero_copy=True, **kw)
        full = train(self.path("full"), model, **kw).dump_path
        self.assertEqual(cap.windows, [self.path("win/window-0"), self.path("win/window-2")])
        self.assertEqual(cap.losses, [])
        self.assert_cann_window(cap, full, [1, 2])
        del cap.windows[1]
        self.assert_cann_window(cap, full, [0])

    def assert_stats_steps(self, cap, steps, rank_dir="rank0"):
        for s in range(steps):
            d = os.path.join(cap.dump_path, "step%d" % s, rank_dir, "0")
            names = os.listdir(d)
            self.assertTrue(names, d)
            self.assertTrue(all(n.endswith(".csv") for n in names), names[:3])

    # ---- CANN, module level --------------------------------------------------------------

    def test_nan_from_a_hook_cann(self):
        cap = train(self.path("win"), bad_step=5, window_steps=3)
        full = train(self.path("full"), bad_step=5).dump_path
        self.assertEqual(cap.losses, [])
        self.assert_stats_steps(cap, 8)
        self.assertEqual(cap.windows, [self.path("win/window-5")])
        self.assert_cann_window(cap, full, [3, 4, 5])
        for s in (3, 4, 5):
            t = self.trigger(cap.windows[0], s, "rank0")
            self.assertEqual((t["rule"], t["step"], t["tensor"], t["value"], t["steps"]),
                             ("nonfinite", 5, "Module.fc2.Linear.forward.0.output.0", "nan",
                              [3, 4, 5]))
        info = cap.window_info()
        self.assertEqual((info["persists"], info["step"], info["held_steps"]), (1, 8, 2))
        # adump scan / verify read the window as any capture
        res = adump.scan(cap.windows[0])
        self.assertEqual(res.origin["op_name"], "Module.fc2.Linear.forward.0")
        self.assertEqual(res.origin["kind"], "origin")
        code, text = helpers.tool("scan", cap.windows[0])
        self.assertIn("Module.fc2.Linear.forward.0", text.split("\n")[1], text)
        self.assertIn("origin", text.split("\n")[1], text)
        code, text = helpers.tool("verify", cap.windows[0])
        self.assertEqual(code, 0, text)
        # ... and compare pairs it with the full capture's steps: nothing diverges
        for s in (3, 4, 5):
            rows = adump.compare(os.path.join(cap.windows[0], "step%d" % s),
                                 os.path.join(full, "step%d" % s), recursive=True)
            self.assertGreater(len(rows), 13)
            self.assertIsNone(rows.summary["first_divergent"])
            self.assertEqual(rows.summary["exit_code"], 0)
        # Over the capture's root, the windows are passed by: walk yields each step's
        # statistics once (13 dumps a step), scan finds the origin in them once.
        dumps = list(adump.walk(cap.dump_path))
        self.assertEqual(len(dumps), 8 * 13)
        self.assertFalse([d for d in dumps if "/window-5/" in d.path])
        self.assertEqual(len(list(adump.walk(cap.windows[0]))), 3 * 13)
        res = adump.scan(cap.dump_path)     # statistics CSVs: names from the file names
        self.assertEqual(res.origin["op_name"], "Module_fc2_Linear_forward_0")
        self.assertEqual(res.dumps, 8 * 13)
        self.assertFalse([r for r in res if "/window-5/" in r["path"]])

    def test_zero_copy_window(self):
        # tensors held by reference in the window, read only as it is written
        cap = train(self.path("win"), bad_step=5, window_steps=3, zero_copy=True)
        full = train(self.path("full"), bad_step=5).dump_path
        self.assertEqual(cap.losses, [])
        self.assert_cann_window(cap, full, [3, 4, 5])

    def test_zero_copy_window_learns_what_changes_in_place(self):
        # From step 1 on fc1's output is changed in place after it was handed over
        # (out += x). Step 0 is copied whole (the window of step 1 has it); step 1's window
        # cannot have that tensor (a loss, never the later value); from step 2 on it is
        # copied at hand-over, and the window of step 3 equals a tensor capture
        cap = train(self.path("win"), Residual, steps=5, persist_at=(1, 3), window_steps=2,
                    zero_copy=True)
        full = train(self.path("full"), Residual, steps=5).dump_path
        self.assertEqual(cap.windows, [self.path("win/window-1"), self.path("win/window-3")])
        self.assertEqual([(x.name, x.cause) for x in cap.losses],
                         [("Module.fc1.Linear.forward.0", "changed_before_written")])
        logs = [os.path.join(r, n) for r, _, ns in os.walk(cap.windows[0]) for n in ns
                if n == "adump-losses.jsonl"]
        self.assertEqual(len(logs), 1, logs)
        with open(logs[0]) as f:
            lines = [json.loads(x) for x in f]
        self.assertEqual({(x["op_name"], x["cause"], "/step1/" in x["file"]) for x in lines},
                         {("Module.fc1.Linear.forward.0", "changed_before_written", True)})
        self.assert_cann_window(cap, full, [2, 3])
        names = {d.op_name for d in adump.walk(os.path.join(cap.windows[0], "step1"))}
        self.assertNotIn("Module.fc1.Linear.forward.0", names)
        # step 0, copied whole, as the tensor capture has it
        del cap.windows[1]
        os.unlink(logs[0])
        shutil.rmtree(os.path.join(cap.windows[0], "step1"))
        self.assert_cann_window(cap, full, [0])

    def test_zero_copy_window_of_the_first_step_is_whole(self):
        # the first step is copied and teaches: fc1's output, changed in place in every
        # step, is in the window of step 0 and, copied at hand-over, in the next one
        self.assert_zero_copy_windows_whole(ResidualAlways, steps=3, persist_at=(0, 2))

    def test_zero_copy_window_tensor_given_new_memory(self):
        # From step 1 on fc1's output gets new memory through .data after it was handed
        # over (its version stays): the window keeps the memory handed over alive, and its
        # check, comparing the data pointer, refuses step 1's dump (a loss, never the other
        # memory's bytes); step 2's is copied at hand-over
        cap = train(self.path("win"), DataSwap, steps=3, persist_at=(1, 2), window_steps=2,
                    zero_copy=True)
        self.assertEqual(cap.windows, [self.path("win/window-1"), self.path("win/window-2")])
        self.assertEqual([(x.name, x.cause) for x in cap.losses],
                         [("Module.fc1.Linear.forward.0", "changed_before_written")])
        names = {s: {d.op_name for d in adump.walk(os.path.join(cap.windows[s > 1],
                                                                "step%d" % s))}
                 for s in (0, 1, 2)}
        self.assertIn("Module.fc1.Linear.forward.0", names[0])
        self.assertNotIn("Module.fc1.Linear.forward.0", names[1])
        self.assertIn("Module.fc2.Linear.forward.0", names[1])
        self.assertIn("Module.fc1.Linear.forward.0", names[2])

    def test_zero_copy_msprobe_window_copies_parameters(self):
        # msprobe's layout dumps each module's parameters, which the optimizer changes in
        # place after the step's dumps: a window holding by reference copies them, from the
        # first step on (a window of step 0 has them too)
        cap, full = [train(self.path(tag), TinyConv, steps=6, bad_step=3, format="msprobe",
                           **kw) for tag, kw in (("win", {"window_steps": 2, "zero_copy": True,
                                                           "persist_at": (0,)}),
                                                  ("full", {}))]
        self.assertEqual(cap.losses, [])
        self.assertEqual(cap.windows, [self.path("win/window-0"), self.path("win/window-3")])
        for w, s in ((0, 0), (1, 2), (1, 3)):
            wdir = os.path.join(cap.windows[w], "step%d" % s, cap.rank_dir)
            fdir = os.path.join(full.dump_path, "step%d" % s, cap.rank_dir)
            want = files_of(fdir)
            self.assertIn("dump_tensor_data/Module.conv.Conv2d.forward.0.parameters.weight.pt",
                          want)
            self.assertEqual(files_of(wdir), sorted(want + ["trigger.json"]))
            for name in want:
                if name.endswith(".pt"):
                    with open(os.path.join(wdir, name), "rb") as a, \
                            open(os.path.join(fdir, name), "rb") as b:
                        self.assertTrue(a.read() == b.read(), "%s of step %d" % (name, s))

    def test_nan_in_the_data_conv_op_level(self):
        cap = train(self.path("win"), TinyConv, steps=6, bad_step=2, how="data_nan",
                    level="op", window_steps=2)
        full = train(self.path("full"), TinyConv, steps=6, bad_step=2, how="data_nan",
                     level="op").dump_path
        self.assertEqual(cap.windows, [self.path("win/window-2")])
        self.assert_stats_steps(cap, 6)
        self.assert_cann_window(cap, full, [1, 2])
        t = self.trigger(cap.windows[0], 2, "rank0")
        self.assertEqual((t["rule"], t["step"], t["tensor"], t["op_type"]),
                         ("nonfinite", 2, "Aten.convolution.0.forward.input.0", "convolution"))
        res = adump.scan(cap.windows[0])
        self.assertEqual(res.origin["kind"], "entered")
        self.assertEqual(res.origin["op_name"], "Aten.convolution.0.forward")

    def test_zero_copy_op_level_window_copies(self):
        # at op level a window copies with zero_copy=True too: the ops dumped are the
        # program's (holding the gradients autograd passes around changed them: an extra
        # Aten.detach in backward), the window equal to a tensor capture's steps
        self.assert_zero_copy_windows_whole(TinyConv, steps=4, bad_step=2, how="data_nan",
                                            level="op", persist_at=(0,))

    def test_bound_trigger(self):
        cap = train(self.path("win"), bad_step=4, how="hook_big", window_steps=2,
                    bounds={"Module.fc2.Linear.forward.*.output.*": 1e3})
        full = train(self.path("full"), bad_step=4, how="hook_big").dump_path
        self.assertEqual(cap.windows, [self.path("win/window-4")])
        self.assert_cann_window(cap, full, [3, 4])
        t = self.trigger(cap.windows[0], 4, "rank0")
        self.assertEqual((t["rule"], t["step"], t["tensor"], t["threshold"]),
                         ("bound", 4, "Module.fc2.Linear.forward.0.output.0", 1e3))
        self.assertGreater(t["value"], 1e3)

    def test_deviation_trigger(self):
        cap = train(self.path("win"), steps=8, bad_step=6, how="hook_big", window_steps=2,
                    triggers=["deviation"], deviation=3.0, deviation_steps=3)
        self.assertEqual(cap.windows, [self.path("win/window-6")])
        t = self.trigger(cap.windows[0], 6, "rank0")
        self.assertEqual((t["rule"], t["step"], t["tensor"]),
                         ("deviation", 6, "Module.fc2.Linear.forward.0.output.0"))
        self.assertGreater(t["value"], t["threshold"])

    # ---- msprobe ---------------------------------------------------------------------------

    def test_msprobe_window_equals_a_tensor_capture(self):
        # both from this line: stack.json holds the call stacks, this test's frames too
        cap, full = [train(self.path(tag), TinyConv, steps=6, bad_step=3, format="msprobe",
                           stack=True, **kw) for tag, kw in (("win", {"window_steps": 3}),
                                                             ("full", {}))]
        full = full.dump_path
        self.assertEqual(cap.windows, [self.path("win/window-3")])
        root = cap.windows[0]
        rank_dir = cap.rank_dir
        self.assertEqual(sorted(os.listdir(root)), ["step1", "step2", "step3"])
        for s in (1, 2, 3):
            wdir = os.path.join(root, "step%d" % s, rank_dir)
            fdir = os.path.join(full, "step%d" % s, rank_dir)
            want = [f for f in files_of(fdir)]
            self.assertEqual(files_of(wdir), sorted(want + ["trigger.json"]))
            for name in want:
                with open(os.path.join(wdir, name), "rb") as a, \
                        open(os.path.join(fdir, name), "rb") as b:
                    wa, fb = a.read(), b.read()
                if name == "dump.json":
                    # msprobe's dump_data_dir: each capture's own absolute path
                    wa = wa.replace(os.path.realpath(wdir).encode(), b"DIR")
                    fb = fb.replace(os.path.realpath(fdir).encode(), b"DIR")
                self.assertTrue(wa == fb, "%s of step %d differs" % (name, s))
            # the statistics: dump.json of every step
            with open(os.path.join(cap.dump_path, "step%d" % s, rank_dir, "dump.json")) as f:
                self.assertEqual(json.load(f)["task"], "statistics")
        t = self.trigger(root, 3, rank_dir)
        self.assertEqual((t["rule"], t["step"], t["tensor"]),
                         ("nonfinite", 3, "Module.conv.Conv2d.forward.0.output.0"))
        code, text = helpers.tool("scan", root)
        self.assertIn("Module.conv.Conv2d.forward.0", text.split("\n")[1], text)

    # ---- clean runs ------------------------------------------------------------------------

    def test_clean_run_writes_no_window_and_the_same_statistics(self):
        for fmt in ("cann", "msprobe"):
            with self.subTest(fmt=fmt):
                win = train(self.path("clean-win-" + fmt), format=fmt, window_steps=3)
                stats = train(self.path("clean-stats-" + fmt), format=fmt, content="stats")
                self.assertEqual(win.windows, [])
                self.assertEqual(win.window_info()["persists"], 0)
                self.assertEqual(win.losses, [])
                a, b = win.dump_path, stats.dump_path
                self.assertEqual([e for e in os.listdir(a) if e.startswith("window")], [])
                key = cann_csv_key if fmt == "cann" else (lambda n: n)
                fa = sorted(files_of(a), key=key)
                fb = sorted(files_of(b), key=key)
                self.assertEqual([key(x) for x in fa], [key(x) for x in fb])
                self.assertEqual(len(set(map(key, fa))), len(fa))
                self.assertEqual(len(fa), 8 * 3 if fmt == "msprobe" else 8 * 13)
                for x, y in zip(fa, fb):
                    with open(os.path.join(a, x), "rb") as f, \
                            open(os.path.join(b, y), "rb") as g:
                        self.assertTrue(f.read() == g.read(), "%s differs from %s" % (x, y))

    def test_meant_infinities_never_fire_an_overflow_does(self):
        """A causal attention mask holds -inf from the first step on (an input of the
        attention module every step, an op's output at op level): no window, at either
        level. An infinity in a tensor that held none before (an overflow) fires."""
        class Causal(nn.Module):
            def __init__(self):
                super().__init__()
                self.att = nn.MultiheadAttention(8, 2, batch_first=True)
                self.fc = nn.Linear(8, 8)

            def forward(self, x):
                n = x.shape[1]
                mask = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
                return self.fc(self.att(x, x, x, attn_mask=mask, need_weights=False)[0])

        def run(path, level, overflow_at=None):
            torch.manual_seed(0)
            model = Causal()
            state = {"step": 0}

            def hook(module, inputs, output):
                if state["step"] == overflow_at:
                    output = output.clone()
                    output[0, 0, 0] = float("inf")
                    return output
                return None
            model.fc.register_forward_hook(hook)
            with adump.torch.capture(model, path, level=level, window_steps=2) as cap:
                for step in range(5):
                    state["step"] = step
                    model(torch.randn(2, 4, 8)).sum().backward()
                    cap.step()
            return cap

        for level in ("module", "op"):
            with self.subTest(level=level):
                cap = run(self.path("mask-" + level), level)
                self.assertEqual(cap.windows, [])
                self.assertEqual(cap.window_info()["persists"], 0)
        cap = run(self.path("overflow"), "module", overflow_at=3)
        self.assertEqual(len(cap.windows), 1)
        with open(os.path.join(cap.windows[0], "step3", cap.rank_dir, "trigger.json")) as f:
            t = json.load(f)
        self.assertEqual((t["rule"], t["step"], t["value"]), ("nonfinite", 3, "inf"))
        self.assertEqual(t["tensor"], "Module.fc.Linear.forward.0.output.0")

    # ---- the other triggers ----------------------------------------------------------------

    def test_exception_in_a_step_writes_the_window(self):
        with self.assertRaises(RuntimeError):
            train(self.path("win"), steps=6, raise_at=(3, "step"), window_steps=3)
        roots = [e for e in os.listdir(self.path("win")) if e.startswith("window")]
        self.assertEqual(roots, ["window-3"])
        root = self.path("win/window-3")
        t = self.trigger(root, 3, "rank0")
        self.assertEqual((t["rule"], t["step"], t["steps"]), ("exception", 3, [1, 2, 3]))
        self.assertEqual(t["reason"], "RuntimeError('boom at 3')")
        # the step's backward and parameter gradients were taken before the window went
        full = train(self.path("full"), steps=4).dump_path

        class Cap:
            windows = [root]
            dump_path = self.path("win")
        self.assert_cann_window(Cap, full, [1, 2, 3])

    def test_exception_between_steps(self):
        with self.assertRaises(RuntimeError):
            train(self.path("win"), steps=6, raise_at=(2, "between"), window_steps=2)
        root = self.path("win/window-3")
        self.assertEqual(sorted(os.listdir(root)), ["step2"])   # step 3 holds nothing
        t = self.trigger(root, 2, "rank0")
        self.assertEqual((t["rule"], t["step"], t["steps"]), ("exception", 3, [2]))

    def test_persist_call_and_note(self):
        cap = train(self.path("win"), steps=6, persist_at=[2, 4], note_at=2, window_steps=2)
        self.assertEqual(cap.windows, [self.path("win/window-2"), self.path("win/window-4")])
        t = self.trigger(cap.windows[0], 2, "rank0")
        self.assertEqual((t["rule"], t["reason"], t["step"], t["steps"], t["job"]),
                         ("call", "loss spike", 2, [1, 2], "nightly"))
        # the second window does not carry the first one's note
        t = self.trigger(cap.windows[1], 4, "rank0")
        self.assertEqual((t["steps"], t.get("job")), ([3, 4], None))

    def test_window_persists_limit(self):
        cap = train(self.path("win"), steps=8, bad_step=2, how="data_nan", window_steps=2,
                    window_persists=1)
        self.assertEqual(len(cap.windows), 1)
        self.assertEqual(cap.window_info()["persists"], 1)

    # ---- configuration ---------------------------------------------------------------------

    def test_bad_config(self):
        m = MLP()
        p = self.path("bad")
        bad = [(dict(window_steps=0), "window_steps"), (dict(window_steps=-2), "window_steps"),
               (dict(window_steps=1.5), "window_steps"),
               (dict(window_steps=2, triggers=["nonfinite", "nan"]), "'nan'"),
               (dict(window_steps=2, triggers="sometimes"), "'sometimes'"),
               (dict(window_steps=2, window_bytes=4096), "window_bytes 4096 below one chunk"),
               (dict(window_steps=2, bounds={"Module.fc2.*": 0}), "max_abs above 0"),
               (dict(window_steps=2, bounds={"Module.nothere.*": 1.0}), "'Module.nothere.*'"),
               (dict(window_steps=2, bounds=[("Module.fc9.Linear.forward.0.output.0", 1.0)]),
                "'Module.fc9.Linear.forward.0.output.0'"),
               (dict(window_steps=2, deviation=-1.0), "deviation"),
               (dict(window_steps=2, layout="packed"), "files layout"),
               (dict(window_steps=2, content="stats"), "content='tensor'"),
               (dict(window_steps=2, steps=[1, 2]), "steps="),
               (dict(window_bytes=1 << 26), "window_steps"),
               (dict(bounds={"*": 1.0}), "window_steps")]
        for kw, says in bad:
            with self.subTest(kw=kw):
                with self.assertRaises(adump.ConfigError) as e:
                    adump.torch.capture(m, p, **kw)
                self.assertIn(says, str(e.exception))
        # patterns that can match pass, module level
        for pattern in ("Module.fc2.Linear.forward.0.output.0", "*.fc3.*", "*backward.1.*",
                        "Module.fc1.Linear.parameters_grad.*"):
            adump.torch.capture(m, p, window_steps=2, bounds={pattern: 5.0})
        with self.assertRaises(adump.StateError):
            adump.torch.capture(m, p).persist("x")
        # op level: the library checks them against step 0's tensors
        with self.assertRaises(adump.ConfigError) as e:
            train(self.path("oplevel"), steps=2, level="op", window_steps=2,
                  bounds={"Aten.nothere*": 1.0})
        self.assertIn("Aten.nothere*", str(e.exception))
        self.assertFalse([n for n in os.listdir(self.path("oplevel")) if "window" in n])
        # ... also when the block ends before any cap.step(): raised once it is closed
        with self.assertRaises(adump.ConfigError):
            with adump.torch.capture(m, self.path("opexit"), level="op", window_steps=2,
                                     bounds={"Aten.nothere*": 1.0}):
                m(torch.randn(2, 8))
        self.assertEqual(os.listdir(self.path("opexit/step0")), ["rank0"])

    def test_session_keys(self):
        s = adump.Session(self.path("s"), time_dir="t", window_steps=2,
                          bounds=[("big.output.*", 10.0)], window_bytes=8 << 20)
        with self.assertRaises(TypeError):
            s.persist_note(5)
        with self.assertRaises(adump.ConfigError):
            s.persist_note("[1, 2]")
        import numpy as np
        st = s.stream()
        st.set_dir("step0")
        st.dump("Mul", "big", [np.ones(4, np.float32)], [np.full(4, 100.0, np.float32)])
        s.flush()
        info = s.window()
        self.assertEqual((info["held_dumps"], info["is_pending"], info["pending_rule"]),
                         (1, True, "bound"))
        self.assertEqual(s.step(), 0)
        self.assertEqual(s.window()["last_window"], self.path("s/window-0"))
        s.close()
        # a step larger than the whole window: what did not fit is a loss, cause window_full
        s = adump.Session(self.path("full"), time_dir="t", window_steps=2,
                          window_bytes=2 << 20)
        st = s.stream()
        st.set_dir("step0")
        st.dump("Big", "big", [np.ones(1 << 20, np.float32)], [])
        st.dump("Small", "small", [np.ones(4, np.float32)], [])
        s.persist("by hand")
        self.assertEqual(s.step(), 0)
        self.assertEqual(s.window()["lost_dumps"], 1)
        s.close()
        root = self.path("full/window-0")
        self.assertEqual([cann_key(n) for n in os.listdir(os.path.join(root, "step0", "0"))],
                         ["Small.small.1"])
        report = adump.verify(root)
        self.assertFalse(report.ok)
        self.assertEqual([p[0] for p in report.problems], ["lost"])
        self.assertTrue(report.problems[0][2].endswith("input 0 of big: window_full"),
                        report.problems)
        plain = adump.Session(self.path("p"))
        with self.assertRaises(adump.StateError):
            plain.persist()
        with self.assertRaises(adump.StateError):
            plain.window()
        self.assertEqual(plain.step(), 0)
        plain.close()

    def test_signal_window_of_zero_copy_dumps_while_window_is_called(self):
        # SIGUSR1 writes a window of 400 zero-copy dumps: each check takes the GIL on the
        # signal's thread, which holds the window's lock, while this thread calls window()
        # in a loop; window() must wait for that lock without the GIL (it deadlocked: the
        # run ends with a traceback, setUp())
        import numpy as np
        import signal
        s = adump.Session(self.path("gil"), time_dir="t", window_steps=2,
                          triggers=["nonfinite", "signal"])
        st = s.stream()
        arrays = [np.full(256, i, np.float32) for i in range(400)]
        checks = []
        for i, a in enumerate(arrays):
            st.dump("Mul", "op%d" % i, [a], [], copy=False,
                    check=lambda i=i: checks.append(i) is None)
        s.flush()
        os.kill(os.getpid(), signal.SIGUSR1)
        while not s.window()["persists"]:
            pass
        s.close()
        self.assertEqual(sorted(checks), list(range(400)))
        self.assertEqual(len(os.listdir(self.path("gil/window-0/t/0"))), 400)

    def test_signal_trigger(self):
        import numpy as np
        import signal
        import time
        s = adump.Session(self.path("sig"), time_dir="t", window_steps=2,
                          triggers=["nonfinite", "signal"])
        st = s.stream()
        st.set_dir("step0")
        st.dump("Mul", "held", [np.ones(4, np.float32)], [np.ones(4, np.float32)])
        s.flush()
        os.kill(os.getpid(), signal.SIGUSR1)        # a hung job: written at once
        for _ in range(200):
            if s.window()["persists"]:
                break
            time.sleep(0.05)
        s.close()
        t = self.trigger(self.path("sig/window-0"), 0, "")
        self.assertEqual((t["rule"], t["steps"]), ("signal", [0]))
        self.assertEqual(len(os.listdir(self.path("sig/window-0/step0/0"))), 1)
        # under adump.torch: the window SIGUSR1 wrote is the capture's too; held by
        # reference, its checks take the GIL on the signal's thread while this one waits
        for zero_copy in (False, True):
            model = MLP()
            top = self.path("sigcap%d" % zero_copy)
            with adump.torch.capture(model, top, window_steps=2, zero_copy=zero_copy,
                                     triggers=["nonfinite", "signal"]) as cap:
                for step in range(4):
                    model(torch.randn(2, 8)).sum().backward()
                    if step == 2:
                        cap._session.flush()
                        os.kill(os.getpid(), signal.SIGUSR1)
                        for _ in range(200):
                            if cap.window_info()["persists"]:
                                break
                            time.sleep(0.05)
                    cap.step()
            root = os.path.join(top, "window-2")
            self.assertEqual(cap.windows, [root])
            self.assertEqual(cap.losses, [])
            self.assertEqual(sorted(os.listdir(root)), ["step1", "step2"])
            t = self.trigger(root, 2, "rank0")      # proc<pid> became rank0 there too
            self.assertEqual((t["rule"], t["steps"]), ("signal", [1, 2]))
            self.assertEqual(len(list(adump.walk(root))), 2 * 13)
        old = signal.signal(signal.SIGUSR1, lambda *a: None)
        try:
            with self.assertRaises(adump.StateError) as e:
                adump.Session(self.path("sig2"), window_steps=2, triggers=["signal"])
            self.assertIn("SIGUSR1", str(e.exception))
        finally:
            signal.signal(signal.SIGUSR1, old)


if __name__ == "__main__":
    unittest.main()
