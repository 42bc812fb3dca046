# SPDX-License-Identifier: Apache-2.0
"""The Python API against careless use and bad files (issue 30): a session closed while other
threads dump, a dump file that shrinks under its reader, lying headers and index arguments.
Each case that could kill the interpreter runs in a child, so a signal fails the test
instead of the runner."""
import json
import os
import struct
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


def varint(n):
    out = bytearray()
    while True:
        out.append(n & 0x7f | (0x80 if n >> 7 else 0))
        n >>= 7
        if not n:
            return bytes(out)


def pb(number, value):
    """A protobuf field: an int as a varint, bytes length-delimited."""
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    return varint(number << 3 | 2) + varint(len(value)) + value


def dump_head(payload_bytes):
    """A dump file's first bytes (header length, DumpData) for one uint8 input of
    @payload_bytes bytes that follows them."""
    inp = pb(1, 4) + pb(2, 2) + pb(3, pb(1, payload_bytes)) + pb(5, payload_bytes)
    dd = pb(4, inp) + pb(6, b"big")
    return struct.pack("<Q", len(dd)) + dd


def xxh32(data):
    """XXH32 (seed 0) of fewer than 16 bytes: an lz4 frame descriptor's checksum."""
    m, p1, p2, p3, p4, p5 = 0xffffffff, 2654435761, 2246822519, 3266489917, 668265263, 374761393

    def rotl(x, r):
        return (x << r | x >> (32 - r)) & m
    h = (p5 + len(data)) & m
    end = len(data) - len(data) % 4
    for i in range(0, end, 4):
        h = rotl((h + struct.unpack_from("<I", data, i)[0] * p3) & m, 17) * p4 & m
    for b in data[end:]:
        h = rotl((h + b * p5) & m, 11) * p1 & m
    h = (h ^ h >> 15) * p2 & m
    h = (h ^ h >> 13) * p3 & m
    return h ^ h >> 16


def lz4_frame(content_size, data):
    """An lz4 frame of @data in stored (uncompressed) 4 MiB blocks whose header claims
    @content_size bytes of content, whatever @data holds."""
    desc = bytes([0x68, 0x70]) + struct.pack("<Q", content_size)   # independent blocks, 4 MiB
    out = bytearray(b"\x04\x22\x4d\x18" + desc + bytes([xxh32(desc) >> 8 & 0xff]))
    for i in range(0, len(data), 4 << 20):
        block = data[i:i + (4 << 20)]
        out += struct.pack("<I", len(block) | 1 << 31) + block
    return bytes(out + b"\0\0\0\0")


# Decode an .lz4 dump whose frame claims 1 GiB but holds 4 MiB under an address-space limit
# of 256 MiB more than the process has: the decoded bytes need memory, the claim must not.
LZ4_CLAIM = r"""
import resource, sys
import adump

d = adump.open(sys.argv[1])
with open("/proc/self/status") as f:
    vm = [int(l.split()[1]) << 10 for l in f if l.startswith("VmSize:")][0]
resource.setrlimit(resource.RLIMIT_AS, (vm + (256 << 20), resource.RLIM_INFINITY))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    d.inputs
    print("decoded")
except adump.Error as e:
    print("raised", type(e).__name__, e)
print("rss_growth_kib", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


class Lz4ContentClaim(unittest.TestCase):
    def test_claim_beyond_content_takes_no_memory(self):
        claim = 1 << 30
        head = dump_head(claim - len(dump_head(claim)))
        path = os.path.join(helpers.tmpdir("lz4claim"), "Add.big.1.1.1700000000000000.lz4")
        with open(path, "wb") as f:
            f.write(lz4_frame(claim, head + os.urandom(4 << 20)))
        self.assertLess(os.path.getsize(path), 5 << 20)
        d = adump.open(path)                    # the header is whole: the claim holds so far
        self.assertEqual(d.tensors[0].bytes + d.tensors[0].offset, claim)
        code, out = run_child(LZ4_CLAIM, path)
        self.assertEqual(code, 0, out)
        self.assertIn("raised CorruptError", out)
        self.assertIn("reading the payload", out)
        growth = int(out.split("rss_growth_kib")[1])
        self.assertLess(growth, 64 << 10, out)  # KiB: the 4 MiB held plus a step or two

    def test_steps_reassemble_the_tensor(self):
        top = helpers.tmpdir("lz4steps")
        a = np.arange(10000, dtype=np.float32)
        with adump.Session(top, workers=1, time_dir="t", compress="lz4") as s:
            st = s.stream()
            st.dump("Add", "a", inputs=[a], outputs=[a[:3]])
            st.sync()
        step = adump._read._DECODE_STEP
        adump._read._DECODE_STEP = 4096 + 4     # steps that split elements and pages
        try:
            d = next(adump.walk(top))
            np.testing.assert_array_equal(d.inputs[0], a)
            np.testing.assert_array_equal(d.outputs[0], a[:3])
        finally:
            adump._read._DECODE_STEP = step


class IndexArguments(unittest.TestCase):
    """Indices the dump does not have are refused, never cut to their low 32 or 64 bits
    (2**32 and 2**40 read tensor 0 before), nor turned into OverflowError."""

    def test_tensor_indices_and_offsets(self):
        top = helpers.tmpdir("index")
        with adump.Session(top, workers=1, time_dir="t") as s:
            st = s.stream()
            st.dump("Add", "a", inputs=[np.full(4, 7, np.float32)],
                    outputs=[np.full(4, 9, np.float32)])
            st.sync()
        path = adump.open(helpers.files_below(top)[0]).path
        r = adump._adump.Reader()
        r.open(path)
        buf = np.zeros(16, np.uint8)
        r.read_into(1, buf)
        self.assertEqual(buf.view(np.float32)[0], 9)
        for idx in (2, 2**32, 2**32 + 1, 2**40, 2**64, 2**70, -1, -2**40):
            buf[:] = 0
            with self.assertRaises(adump.ConfigError, msg=idx):
                r.read_into(idx, buf)
            self.assertFalse(buf.any(), idx)
            with self.assertRaises(adump.ConfigError, msg=idx):
                r.tensor_stats(idx)
        for off in (2**64, 2**80, -1, 2**64 - 1):
            with self.assertRaises(adump.ConfigError, msg=off):
                r.read_into(0, buf, off)
        self.assertFalse(buf.any())
        with self.assertRaises(TypeError):
            r.read_into(1.0, buf)
        self.assertEqual(r.tensor_stats(np.int64(1))["max"], 9)
        r.close()
        with self.assertRaises(adump.StateError):
            r.read_into(0, buf)

    def test_device_id(self):
        with adump.Session(helpers.tmpdir("devid")) as s:
            for dev in (2**32, 2**32 + 1, 2**64, -1):
                with self.assertRaises(adump.ConfigError, msg=dev):
                    s.stream(dev)


class MalformedDumpJson(unittest.TestCase):
    """msprobe's dump.json whose tensor entries are not msprobe's: adump.walk raises
    adump.CorruptError naming the entry (it was a bare ValueError, TypeError or
    RecursionError), adump.verify lists a problem and never raises."""

    def rank_dir(self, text):
        d = helpers.tmpdir("badjson")
        os.makedirs(os.path.join(d, "dump_tensor_data"))
        with open(os.path.join(d, "dump.json"), "w") as f:
            f.write(text)
        return d

    def test_bad_tensor_fields(self):
        good = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2],
                "data_name": "Functional.add.0.forward.input.0.pt"}
        for bad in ({"shape": ["a"]}, {"shape": "12"}, {"shape": 5}, {"shape": [None]},
                    {"shape": [-1]}, {"shape": [1.5]}, {"shape": [True]}, {"shape": {"a": 1}},
                    {"data_name": 5}, {"data_name": ["x.pt"]}):
            t = dict(good, **bad)
            doc = {"task": "tensor", "level": "L1",
                   "data": {"Functional.add.0.forward": {"input_args": [t], "output": []}}}
            d = self.rank_dir(json.dumps(doc))
            with self.assertRaises(adump.CorruptError, msg=bad) as cm:
                list(adump.walk(d))
            self.assertIn("Functional.add.0.forward input.0", str(cm.exception))
            rep = adump.verify(d)
            self.assertFalse(rep.ok, bad)
            self.assertTrue(any("Functional.add.0.forward input.0" in p[2]
                                for p in rep.problems), (bad, rep.problems))

    def test_unhashable_dtype(self):
        t = {"type": "torch.Tensor", "dtype": ["torch.float32"], "shape": [2]}
        doc = {"data": {"Functional.add.0.forward": {"input_args": [t]}}}
        d = self.rank_dir(json.dumps(doc))
        dumps = list(adump.walk(d))             # an unknown dtype, as any other name
        self.assertEqual(dumps[0].tensors[0].dtype_code, -1)
        self.assertEqual(dumps[0].inputs, [None])
        self.assertTrue(adump.verify(d).ok)

    def test_nested_too_deep(self):
        d = self.rank_dir('{"data": {"a.0.forward": {"input_args": %s}}}' %
                          ("[" * 100000 + "]" * 100000))
        with self.assertRaises(adump.CorruptError):
            list(adump.walk(d))
        self.assertFalse(adump.verify(d).ok)


class StatsCsv(unittest.TestCase):
    def test_scalar_row_reads_back(self):
        # CANN (and pipeline/stats.c) write a 0-d tensor's shape as "-"; the loss of every
        # op-level statistics capture is one, and adump.walk refused the file.
        top = helpers.tmpdir("statscalar")
        with adump.Session(top, workers=1, time_dir="t", content="stats") as s:
            st = s.stream()
            st.dump("Mul", "loss", inputs=[np.array(2.5, np.float32),
                                           np.arange(6, dtype=np.float32).reshape(2, 3)],
                    outputs=[np.array(1.5, np.float32)])
            st.sync()
        with open(helpers.files_below(top)[0]) as f:
            self.assertEqual(f.read().count(",-,"), 2)
        d, = adump.walk(top)
        self.assertEqual([t.shape for t in d.tensors], [(), (2, 3), ()])
        self.assertEqual([r["Max Value"] for r in d.stats], [2.5, 5, 1.5])

    def test_not_text_is_corrupt(self):
        top = helpers.tmpdir("statsbin")
        path = os.path.join(top, "Mul.loss.1.1.1700000000000000.csv")
        with open(path, "wb") as f:
            f.write(b"Input/Output,Index\n\xff\xfe,1,2,3\n")
        with self.assertRaises(adump.CorruptError):
            adump.open(path)
        with open(path, "w") as f:
            f.write("Input/Output,Index\nInput,0,extra\n")
        with self.assertRaises(adump.CorruptError):
            adump.open(path)


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


class BadArguments(unittest.TestCase):
    """A bad keyword of compare, scan, open or walk is adump.ConfigError naming it (was a
    bare ValueError, which the README does not list), raised before anything is read."""

    def test_each(self):
        top = helpers.tmpdir("badargs")
        calls = {
            "compare threads": lambda: adump.compare(top, top, threads=-1),
            "compare threads type": lambda: adump.compare(top, top, threads="4"),
            "scan threads": lambda: adump.scan(top, threads=5000),
            "open bf16": lambda: adump.open(os.path.join(top, "x"), bf16="float16"),
            "walk order": lambda: list(adump.walk(top, order="size")),
        }
        for what, call in calls.items():
            with self.subTest(what):
                with self.assertRaises(adump.ConfigError) as cm:
                    call()
                self.assertIsInstance(cm.exception, adump.Error)
                self.assertIn(what.split()[1], str(cm.exception))


class FileNames(unittest.TestCase):
    """An op name with '<', a newline and UTF-8 is written under a name of [A-Za-z0-9_-]
    fields, which adump's readers (msaccucmp's pattern) accept: scan and compare read the
    capture adump wrote instead of skipping it as "not a dump file name"."""

    def test_written_names_are_read_back(self):
        top = helpers.tmpdir("filenames")
        cap = os.path.join(top, "cap")
        s = adump.Session(cap, time_dir="t")
        st = s.stream()
        st.dump("Add", "<img src=x onerror=alert(1)>\nline\u00e9",
                inputs=[np.full(4, np.nan, np.float32)])
        st.dump("Add", "plain", inputs=[np.ones(4, np.float32)])
        s.close()
        d = os.path.join(cap, "t", "0")
        names = sorted(os.listdir(d))
        self.assertEqual(len(names), 2, names)
        for n in names:
            self.assertRegex(n, r"\A[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[0-9]+\.[0-9]+\.[0-9]+\Z")
        self.assertIn("Add._img_src_x_onerror_alert_1___line__.", " ".join(names))
        code, out = helpers.tool("scan", d)
        self.assertEqual(code, 1, out)  # the NaN was found: the file was read
        self.assertNotIn("skipped", out)
        self.assertIn("2 dumps, 1 anomalous ops, 0 unreadable", out)
        code, out = helpers.tool("compare", "-m", d, "-g", d, "-out", os.path.join(top, "o"))
        self.assertEqual(code, 0, out)
        self.assertIn("2 ops (2 matched", out)


class ToolMessages(unittest.TestCase):
    """A name from a capture reaches the tools' stderr as text: its control bytes (an escape
    sequence, a newline forging a line) written \\xNN as adump's log does, not raw."""

    def test_convert_names_escaped(self):
        top = helpers.tmpdir("toolmsg")
        d = os.path.join(top, "d")
        os.makedirs(d)
        name = "Add.op\x1b[31mRED\nadump convert: forged.1.2.3"
        with open(os.path.join(d, name), "wb") as f:
            f.write(b"not a dump file at all, not even close")
        code, out = helpers.tool("convert", "-d", d, "-out", os.path.join(top, "o"))
        self.assertNotEqual(code, 0, out)
        self.assertNotIn("\x1b", out)
        self.assertIn("\\x1b[31mRED\\x0aadump convert: forged", out)
        self.assertFalse(any(line.startswith("adump convert: forged")
                             for line in out.splitlines()), out)
        # verify's report: one line per problem, no line forged by a name.
        code, out = helpers.tool("verify", d)
        self.assertEqual(code, 1, out)
        self.assertNotIn("\x1b", out)
        self.assertFalse(any(line.startswith("adump convert: forged")
                             for line in out.splitlines()), out)


    def test_scan_inspect_stdout_escaped(self):
        # An op name with an OSC title change, a colour and a newline forging a line: scan's
        # and inspect's tables on stdout show it as text (\xNN), one line per row.
        exe = os.environ.get("ADUMP_TOOL")
        if not exe:
            raise unittest.SkipTest("ADUMP_TOOL not set")
        name = "e\x1b]0;PWN\x07\x1b[31mred\nFAKE LINE"
        cap = os.path.join(helpers.tmpdir("toolout"), "cap")
        s = adump.Session(cap, time_dir="t")
        s.stream().dump("Add", name, inputs=[np.full(4, np.nan, np.float32)])
        s.close()
        d = os.path.join(cap, "t", "0")
        files = [os.path.join(d, f) for f in os.listdir(d)]
        for args, code in ((["scan", d], 1), (["inspect"] + files, 0)):
            p = subprocess.run([exe] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            self.assertEqual(p.returncode, code, p.stderr)
            out = p.stdout
            self.assertFalse(any(b < 0x20 and b != 0x0a for b in out), out)
            self.assertNotIn(b"\x7f", out)
            self.assertFalse(any(line.startswith(b"FAKE LINE") for line in out.split(b"\n")),
                             out)
            self.assertIn(b"e\\x1b]0;PWN\\x07\\x1b[31mred\\x0aFAKE LINE", out)


class LinksInsideCapture(unittest.TestCase):
    """A symbolic link (to a dump, to a directory) or a FIFO inside a capture (issue 30):
    adump.walk never follows nor reads it (it warns), adump.verify reports each as a
    problem. Before, walk read the linked dumps and verify passed the capture."""

    def test_links_and_fifo(self):
        top = helpers.tmpdir("links")
        for name in ("cap", "outside"):
            s = adump.Session(os.path.join(top, name), workers=1, time_dir="t")
            st = s.stream()
            st.dump("Add", name, inputs=[np.arange(6, dtype=np.float32)])
            st.sync()
            s.close()
        cap, outside = os.path.join(top, "cap"), os.path.join(top, "outside", "t", "0")
        (linked,) = os.listdir(outside)
        os.symlink(os.path.join(outside, linked),
                   os.path.join(cap, "t", "0", "Add.linked.9.9.9"))
        os.symlink(outside, os.path.join(cap, "t", "0", "out_dir"))
        os.mkfifo(os.path.join(cap, "t", "0", "Add.fifo.8.8.8"))
        with self.assertWarns(UserWarning):
            dumps = list(adump.walk(cap))
        self.assertEqual([d.op_name for d in dumps], ["cap"])
        rep = adump.verify(cap)
        self.assertFalse(rep.ok)
        odd = sorted(os.path.basename(p) for k, p, m in rep.problems
                     if "not a regular file" in m)
        self.assertEqual(odd, ["Add.fifo.8.8.8", "Add.linked.9.9.9", "out_dir"])


class StreamDirs(unittest.TestCase):
    """Stream.set_dir: a ".." component is refused (EINVAL), and so is a directory below
    dump_path reached through a planted link (ENOTDIR), each with the library's reason as
    the message; nothing is written outside, the stream writes on where it did. Before,
    both were made and written through."""

    def test_dotdot_and_link_refused(self):
        import errno
        top = helpers.tmpdir("setdir")
        cap, outside = os.path.join(top, "cap"), os.path.join(top, "outside")
        os.makedirs(cap)
        os.makedirs(outside)
        os.symlink(outside, os.path.join(cap, "step1"))
        s = adump.Session(cap, workers=1, time_dir="t")
        st = s.stream()
        st.set_dir("step0")
        for bad in ("../up", "step0/../../up", os.path.join(cap, "x", "..", "..", "up")):
            with self.assertRaises(OSError) as cm:
                st.set_dir(bad)
            self.assertEqual(cm.exception.errno, errno.EINVAL)
            self.assertIn("'..' component", str(cm.exception))
        with self.assertRaises(OSError) as cm:
            st.set_dir("step1/rank0")
        self.assertEqual(cm.exception.errno, errno.ENOTDIR)
        self.assertIn("not a directory of its own", str(cm.exception))
        st.dump("Add", "kept", inputs=[np.arange(6, dtype=np.float32)])
        st.sync()
        s.close()
        self.assertEqual(os.listdir(outside), [])
        self.assertFalse(os.path.exists(os.path.join(top, "up")))
        self.assertEqual([d.op_name for d in adump.walk(os.path.join(cap, "step0"))], ["kept"])

if __name__ == "__main__":
    unittest.main()
