# SPDX-License-Identifier: Apache-2.0
"""A training rank SIGKILLed mid-step under adump.torch (issue 30): a dump handed over is
either on disk when the process dies or visible as missing to `adump verify` and to
adump.verify; a clean end leaves nothing to report. A child process captures step 0 whole,
then the workers are held (testpoint worker.hold) so step 1's dumps are handed over and never
written, and the child kills itself. Module and op level, CANN's format (files and the
packed layout) and msprobe's.
Exits 77 without torch or without testpoints."""
import os
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

try:
    import torch  # noqa: F401
except ImportError:
    print("test_torch_kill: torch is not installed (python3-torch): skipped")
    sys.exit(77)

import adump  # noqa: E402
from adump import _adump  # noqa: E402

if not _adump._TESTPOINTS:
    print("test_torch_kill: built without testpoints (ADUMP_ENABLE_TESTPOINTS): skipped")
    sys.exit(77)

CHILD = r"""
import os, signal, sys
import torch
import adump.torch
from adump import _adump

top, level, fmt, end = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
kill = end in ("kill", "kill-written")
layout = {"layout": "packed"} if fmt == "packed" else {}
fmt = "cann" if fmt == "packed" else fmt
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
x = torch.randn(8, 32)
# Staging for every dump of a step: the held workers free none, and a producer that found
# no free buffer would wait for them.
cap = adump.torch.capture(model, top, level=level, format=fmt, workers=1, stream_max=2,
                          chunk_bytes=65536, pool_bytes=64 << 20, **layout)
with cap:
    model(x).sum().backward()
    cap.step()                          # step 0: written whole
    if end == "kill":
        _adump._testpoint_arm("worker.hold", 11)
    model(x).sum().backward()           # step 1: handed over
    if end == "kill-written":
        # Every dump of the step written (its .pt files), msprobe's dump.json not yet.
        for st in cap._streams.values():
            st.sync()
    if kill:
        print("handed-over", cap.dumps, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    cap.step()
"""


def run_child(top, level, fmt, kill):
    end = kill if isinstance(kill, str) else "kill" if kill else "clean"
    p = subprocess.run([sys.executable, "-c", CHILD, top, level, fmt, end],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=240)
    return p


def journals(top):
    return [f for f in helpers.files_below(top) if os.path.basename(f).startswith(
        "adump-journal-")]


class Kill(unittest.TestCase):
    def killed(self, level, fmt, end=True):
        top = helpers.tmpdir("kill-%s-%s" % (level, fmt))
        p = run_child(top, level, fmt, end)
        self.assertEqual(p.returncode, -signal.SIGKILL, p.stderr)
        self.assertIn("handed-over", p.stdout)
        # Python's verify: step 1's dumps are missing, not passed over in silence.
        rep = adump.verify(top)
        self.assertFalse(rep.ok)
        missing = [m for k, _, m in rep.problems if k == "missing"]
        self.assertTrue(missing, rep.problems)
        self.assertTrue(all("step1" in m for m in missing), missing)
        self.assertTrue(all(k in ("missing",) for k, _, _ in rep.problems), rep.problems)
        # The command says the same and fails.
        code, out = helpers.tool("verify", top)
        self.assertNotEqual(code, 0, out)
        self.assertIn("MISSING", out)
        self.assertIn("step1", out)
        # Step 0 alone (written whole before the hold) passes, and what is on disk reads
        # (the journals are no dumps to adump.walk).
        self.assertTrue(adump.verify(os.path.join(top, "step0")).ok)
        self.assertTrue(list(adump.walk(top)))
        if fmt == "cann":
            code, out = helpers.tool("convert", "-d", top, "-r", "-out",
                                     os.path.join(top + "-npy"))
            self.assertEqual(code, 0, out)
        return missing

    def clean(self, level, fmt):
        top = helpers.tmpdir("clean-%s-%s" % (level, fmt))
        p = run_child(top, level, fmt, False)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(journals(top), [])
        rep = adump.verify(top)
        self.assertTrue(rep.ok, rep.problems)
        code, out = helpers.tool("verify", top)
        self.assertEqual(code, 0, out)

    def test_module_cann(self):
        missing = self.killed("module", "cann")
        # Each dump handed over in step 1 by name: its file under the rank directory.
        self.assertTrue(any("Module_0_Linear_forward_0" in m for m in missing), missing)

    def test_op_cann(self):
        self.killed("op", "cann")

    def test_module_msprobe(self):
        missing = self.killed("module", "msprobe")
        self.assertTrue(any("dump.json" in m or "Module." in m for m in missing), missing)

    def test_op_msprobe(self):
        self.killed("op", "msprobe")

    def test_msprobe_written_not_in_dump_json(self):
        """Each dump's .pt files written, the step's dump.json not yet: the entries waiting
        for it are counted by the directory's journal, and lost with the process."""
        missing = self.killed("module", "msprobe", "kill-written")
        self.assertEqual(len(missing), 1, missing)
        self.assertIn("dump.json: 8 dump(s) handed over but never written into it", missing[0])

    def test_module_packed(self):
        missing = self.killed("module", "packed")
        self.assertTrue(any("not in the index" in m for m in missing), missing)

    def test_op_packed(self):
        self.killed("op", "packed")

    def test_clean_end(self):
        for level in ("module", "op"):
            for fmt in ("cann", "msprobe", "packed"):
                with self.subTest(level=level, fmt=fmt):
                    self.clean(level, fmt)


if __name__ == "__main__":
    unittest.main()
