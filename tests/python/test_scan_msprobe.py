# SPDX-License-Identifier: Apache-2.0
"""`adump scan` and adump.scan on a format="msprobe" capture (issue 31, Scan): the entries of
dump.json are read through the msprobe reader (their .pt files, or dump.json's statistics), so
with a NaN planted in one Linear's weight the scan reads every dump and names that Linear's
forward as the origin, in tensor and statistics captures. Exits 77 without torch."""
import os
import shutil
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("test_scan_msprobe: torch is not installed (python3-torch): skipped")
    sys.exit(77)

import adump  # noqa: E402
import adump.torch  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def capture(path, **kw):
    torch.manual_seed(0)
    m = Net()
    with torch.no_grad():
        m.fc2.weight[0, 1] = float("nan")
    x = torch.randn(2, 4)
    with adump.torch.capture(m, path, format="msprobe", parameters=False, **kw) as cap:
        m(x).sum().backward()
        cap.step()


class ScanMsprobe(unittest.TestCase):
    def setUp(self):
        self.dir = helpers.tmpdir("scan-msprobe")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def check(self, res):
        self.assertGreater(res.dumps, 0)
        bad = [d for d in res if d["kind"] == "unreadable"]
        self.assertEqual(bad, [], "dumps unreadable: %r" % bad[:2])
        self.assertIsNotNone(res.origin)
        self.assertEqual(res.origin["op_name"], "Module.fc2.Linear.forward.0")
        self.assertGreater(res.origin["outputs"]["nan"], 0)

    def test_tensors(self):
        cap = os.path.join(self.dir, "cap")
        capture(cap)
        self.check(adump.scan(cap))
        code, text = helpers.tool("scan", cap)
        self.assertIn(" 0 unreadable", text)
        self.assertIn("Module.fc2.Linear.forward.0", text)

    def test_statistics(self):
        cap = os.path.join(self.dir, "cap")
        capture(cap, content="stats")
        self.check(adump.scan(cap))


if __name__ == "__main__":
    unittest.main()
