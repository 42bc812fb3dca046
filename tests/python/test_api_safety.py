# SPDX-License-Identifier: Apache-2.0
"""The Python API against careless use and bad files (issue 30): a session closed while other
threads dump, a dump file that shrinks under its reader, lying headers and index arguments.
Each case that could kill the interpreter runs in a child, so a signal fails the test
instead of the runner."""
import os
import subprocess
import sys
import textwrap
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

import adump  # noqa: E402


def run_child(code, *args):
    """Run @code in a fresh interpreter with this one's path; (returncode, output)."""
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)] + [str(a) for a in args],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=240)
    return p.returncode, p.stdout


# Threads dump on their own streams until the session closes under them: every one must end
# with adump.ClosedError, and every dump that returned a task id must be on disk.
CLOSE_RACE = r"""
import os, sys, threading
import numpy as np
import adump

top, rounds = sys.argv[1], int(sys.argv[2])
for r in range(rounds):
    s = adump.Session(os.path.join(top, "r%d" % r), workers=2, time_dir="t")
    started = threading.Barrier(5)
    ended, ok = [], []

    def producer(i):
        st = s.stream()
        a = np.arange(2048, dtype=np.float32) + i
        n = 0
        started.wait()
        try:
            while True:
                st.dump("Add", "t%d" % i, inputs=[a], outputs=[a])
                n += 1
                if n % 7 == 0:
                    st.sync()
        except BaseException as e:      # anything but ClosedError is reported below
            ended.append(type(e).__name__ + ": " + str(e))
        ok.append(n)

    threads = [threading.Thread(target=producer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    started.wait()
    while s.stats()["records"] < 8 * (r % 3 + 1):
        pass
    s.close()
    for t in threads:
        t.join()
    assert len(ended) == 4 and all(e.startswith("ClosedError") for e in ended), ended
    files = os.listdir(os.path.join(top, "r%d" % r, "t", "0"))
    assert len(files) == sum(ok), (len(files), sum(ok))
    assert adump.verify(os.path.join(top, "r%d" % r)).ok
print("ok", rounds)
"""

# A stream closed by another thread than its owner while the owner dumps into it.
STREAM_CLOSE_RACE = r"""
import os, sys, threading
import numpy as np
import adump

top = sys.argv[1]
with adump.Session(top, workers=1, time_dir="t") as s:
    for r in range(20):
        box, ended, ok = [], [], [0]
        ready = threading.Event()

        def producer():
            st = s.stream()
            box.append(st)
            ready.set()
            a = np.zeros(4096, np.float32)
            try:
                while True:
                    st.dump("Mul", "m", inputs=[a])
                    ok[0] += 1
            except BaseException as e:
                ended.append(type(e).__name__)

        t = threading.Thread(target=producer)
        t.start()
        ready.wait()
        while s.stats()["records"] < 2 * (r + 1):
            pass
        box[0].close()
        t.join()
        assert ended == ["ClosedError"], ended
print("ok")
"""


# A plain dump and a packed capture truncated after adump.open / walk read their headers and
# before their tensors are read: a mapped file would die of SIGBUS at the first touch.
SHRINK = r"""
import os, sys
import numpy as np
import adump

top, layout = sys.argv[1], sys.argv[2]
with adump.Session(top, workers=1, time_dir="t", layout=layout) as s:
    st = s.stream()
    st.dump("Add", "a", inputs=[np.arange(1 << 18, dtype=np.float32)],
            outputs=[np.ones(1 << 18, np.float32)])
    st.sync()
if layout == "files":
    path = os.path.join(top, "t", "0", os.listdir(os.path.join(top, "t", "0"))[0])
    d = adump.open(path)
else:
    d = next(adump.walk(top))
    path = [os.path.join(dp, f) for dp, _, fs in os.walk(top) for f in fs
            if f.endswith(".seg")][0]
os.truncate(path, os.path.getsize(path) // 2)
try:
    d.outputs[0].sum()
    print("read a truncated file")
except adump.Error as e:
    print("raised", type(e).__name__, e)
"""


class FileShrinks(unittest.TestCase):
    def check(self, layout):
        code, out = run_child(SHRINK, helpers.tmpdir("shrink"), layout)
        self.assertEqual(code, 0, out)          # not -SIGBUS
        self.assertIn("raised IncompleteError", out)
        self.assertIn("shrank after it was opened", out)

    def test_plain_file_truncated_after_open(self):
        self.check("files")

    def test_packed_segment_truncated_after_walk(self):
        self.check("packed")


class CloseFromAnotherThread(unittest.TestCase):
    def test_session_close_while_streams_dump(self):
        code, out = run_child(CLOSE_RACE, helpers.tmpdir("close"), 25)
        self.assertEqual(code, 0, out)
        self.assertIn("ok 25", out)

    def test_stream_close_while_its_owner_dumps(self):
        code, out = run_child(STREAM_CLOSE_RACE, helpers.tmpdir("stclose"))
        self.assertEqual(code, 0, out)
        self.assertIn("ok", out)

    def test_closed_error_is_documented(self):
        self.assertTrue(issubclass(adump.ClosedError, adump.Error))
        self.assertIn("ClosedError", adump.__all__)
        s = adump.Session(helpers.tmpdir("closed"))
        st = s.stream()
        s.close()
        for call in (lambda: st.dump("Add", "a", inputs=[np.zeros(2, np.float32)]),
                     st.sync, lambda: st.set_dir("x"), st.stats, s.flush, s.stats,
                     s.stream):
            with self.assertRaises(adump.ClosedError):
                call()
        self.assertEqual(s.close(), 0)          # closing twice is a no-op


if __name__ == "__main__":
    unittest.main()
