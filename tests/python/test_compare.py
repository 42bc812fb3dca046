# SPDX-License-Identifier: Apache-2.0
"""adump.compare and adump.compare_arrays against the adump command: two small captures (same
ops, one tensor perturbed), the rows checked cell by cell against the CSV `adump compare`
writes for the same pair; bad paths and algorithms."""
import csv
import math
import os
import struct
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

import adump  # noqa: E402


def tensors():
    rng = np.random.default_rng(15)
    return {
        "a": rng.standard_normal((4, 8)).astype(np.float32),
        "b": rng.standard_normal((8, 3)).astype(np.float32),
        "c": rng.standard_normal((4, 3)).astype(np.float32),
        "d": rng.standard_normal(12).astype(np.float16),
        "e": np.arange(12, dtype=np.int32),
    }


def capture(tag, t):
    top = helpers.tmpdir(tag)
    with adump.Session(top, workers=1) as s:
        st = s.stream()
        st.dump("MatMul", "layer.0.mm", inputs=[t["a"], t["b"]], outputs=[t["c"]])
        st.dump("Add", "layer.0.add", inputs=[t["c"], t["d"]], outputs=[t["e"]])
        st.sync()
    files = helpers.files_below(top)
    assert len(files) == 2, files
    return os.path.dirname(files[0])


def read_csv(path):
    with open(path, newline="") as f:
        table = list(csv.reader(f))
    return table[0], table[1:]


class Compare(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.mine = tensors()
        cls.golden = tensors()
        cls.golden["d"] = cls.golden["d"].copy()
        cls.golden["d"][3] += np.float16(2.5)               # Add's input 1 differs
        cls.my_dir = capture("cmp-my", cls.mine)
        cls.golden_dir = capture("cmp-golden", cls.golden)

    def cli_csv(self, *opts):
        out = helpers.tmpdir("cmp-cli")
        code, text = helpers.tool("compare", "-m", self.my_dir, "-g", self.golden_dir,
                                  "-out", out, "--quiet", *opts)
        self.assertEqual(code, 0, text)
        found = [f for f in os.listdir(out) if f.startswith("result_")]
        self.assertEqual(len(found), 1, found)
        return os.path.join(out, found[0]), out

    def check_against_cli(self, rows, *opts):
        path, _ = self.cli_csv(*opts)
        header, cells = read_csv(path)
        self.assertEqual(rows.columns, header)
        self.assertEqual(len(rows), len(cells))
        keys = list(rows[0].cells)
        self.assertEqual(len(keys), len(header))          # no key lost to the repeats
        for row, want in zip(rows, cells):
            self.assertEqual([row.cells[k] for k in keys], want)
            # The numbers are the cells' numbers, at full precision.
            for k, text in zip(keys, want):
                if k == "Index":
                    self.assertEqual(row[k], int(text))
                elif k in adump._adump.compare_alg_names() and k != "StandardDeviation":
                    if text == "NaN" or text == "nan":
                        self.assertTrue(math.isnan(row[k]), (k, row[k]))
                    else:
                        self.assertIsInstance(row[k], float)
                        self.assertEqual("%.6f" % row[k] if text != "1.0" else "1.0", text)
        return path

    def test_rows_equal_cli_csv(self):
        out = helpers.tmpdir("cmp-py")
        rows = adump.compare(self.my_dir, self.golden_dir, out=out, threads=2)
        # MatMul: 2 inputs + 1 output; Add: 2 inputs + 1 output.
        self.assertEqual(len(rows), 6)
        self.assertEqual(rows.summary["matched_count"], 2)
        self.assertEqual(rows.summary["tensor_count"], 6)
        self.assertEqual(rows.summary["exit_code"], 0)
        cli = self.check_against_cli(rows)
        self.assertEqual(os.path.dirname(rows.csv), out)
        with open(rows.csv, "rb") as a, open(cli, "rb") as b:
            self.assertEqual(a.read(), b.read())
        self.assertIsNone(rows.advice)

        self.assertEqual([r["OpType"] for r in rows], ["MatMul"] * 3 + ["Add"] * 3)
        self.assertIn("NPUDumpDataType", rows[0])
        self.assertIn("GroundTruthAddress", rows[0])
        self.assertEqual(rows.columns.count("DataType"), 2)
        perturbed = [r for r in rows if r["TensorIndex"].endswith("input:1")
                     and r["OpType"] == "Add"]
        self.assertEqual(len(perturbed), 1)
        for r in rows:
            if r is perturbed[0]:
                self.assertLess(r["CosineSimilarity"], 1.0)
                self.assertGreater(r["MaxAbsoluteError"], 2.0)
                self.assertEqual(r["verdict"], "error")
                self.assertIn("floor", r["reason"])
            else:
                self.assertEqual(r.cells["CosineSimilarity"], "1.000000", r)
                self.assertEqual(r["MaxAbsoluteError"], 0.0, r)
                self.assertEqual(r["verdict"], "pass", r)
                self.assertEqual(r["reason"], "")
            self.assertIsNone(r["module"])
            self.assertEqual(r["nan_count"], (0, 0))
        self.assertEqual(rows.summary["first_divergent_row"], rows.index(perturbed[0]))
        self.assertEqual(rows.summary["first_divergent_op"], "layer_0_add")
        self.assertEqual(rows.summary["first_divergent_verdict"], "error")
        self.assertEqual(rows.summary["error_count"], 1)

    def test_options_match_cli(self):
        rows = adump.compare(self.my_dir, self.golden_dir, algorithms=[0, "MaxRelativeError"],
                             msprobe=True, advisor=True)
        self.assertIn("OverFlow", rows.columns)
        self.assertIn("EucDist", rows.columns)
        self.assertNotIn("RootMeanSquareError", rows.columns)
        self.assertIsNone(rows.csv)
        self.check_against_cli(rows, "-alg", "0,8", "--msprobe", "-advisor")

        out = helpers.tmpdir("cmp-adv")
        rows = adump.compare(self.my_dir, self.golden_dir, algorithms="CosineSimilarity",
                             advisor=True, out=out)
        self.assertEqual(rows.advice, os.path.join(out, "advisor_summary.txt"))
        with open(rows.advice) as f:
            advice = f.read()
        _, cli_out = self.cli_csv("-alg", "0", "-advisor")
        with open(os.path.join(cli_out, "advisor_summary.txt")) as f:
            self.assertEqual(advice, f.read())

    def test_one_side_only(self):
        top = helpers.tmpdir("cmp-one")
        with adump.Session(top, workers=1) as s:
            st = s.stream()
            st.dump("MatMul", "layer.0.mm", inputs=[self.mine["a"], self.mine["b"]],
                    outputs=[self.mine["c"]])
            st.sync()
        only = os.path.dirname(helpers.files_below(top)[0])
        rows = adump.compare(only, self.golden_dir)
        self.assertEqual(rows.summary["golden_only_count"], 1)
        self.assertEqual(rows.summary["exit_code"], 2)
        self.assertEqual(rows[0]["CosineSimilarity"], 1.0)
        self.assertEqual(rows[0].cells["CosineSimilarity"], "1.000000")
        self.assertEqual(rows[0]["verdict"], "pass")
        self.assertEqual(rows[-1]["verdict"], "none")     # the op on one side only

    def test_errors(self):
        with self.assertRaises(OSError):
            adump.compare(os.path.join(self.my_dir, "no-such-dir"), self.golden_dir)
        with self.assertRaises(adump.NotFoundError) as cm:
            adump.compare(helpers.tmpdir("cmp-empty"), self.golden_dir)
        self.assertEqual(cm.exception.code, adump._adump.ERR_BASE + 5)
        self.assertTrue(cm.exception.message)
        with self.assertRaises(adump.ConfigError) as cm:
            adump.compare(self.my_dir, self.golden_dir, algorithms="CosineSimilarity,42")
        self.assertIn("42", str(cm.exception))
        with self.assertRaises(ValueError):
            adump.compare(self.my_dir, self.golden_dir, threads=-1)
        with self.assertRaises(OSError):
            path = os.path.join(helpers.tmpdir("cmp-file"), "f")
            open(path, "w").close()
            adump.compare(self.my_dir, self.golden_dir, out=path)

    def test_compare_arrays(self):
        rows = adump.compare(self.my_dir, self.golden_dir)
        for name, row in (("a", rows[0]), ("d", rows[4])):
            m = adump.compare_arrays(self.mine[name], self.golden[name])
            for alg in adump._adump.compare_alg_names():
                self.assertEqual(m.cells[alg], row.cells[alg], (name, alg))
                self.assertEqual(m[alg], row[alg], (name, alg))
            self.assertEqual(m["CompareFailReason"], row["CompareFailReason"])
            self.assertEqual(m["verdict"], row["verdict"])
        m = adump.compare_arrays(self.mine["d"], self.golden["d"])
        self.assertLess(m["CosineSimilarity"], 1.0)
        m = adump.compare_arrays(self.mine["a"], self.mine["a"][:, ::2])   # 32 vs 16 elements
        self.assertTrue(math.isnan(m["CosineSimilarity"]))
        self.assertEqual(m.cells["CosineSimilarity"], "NaN")
        self.assertEqual(m["verdict"], "none")
        self.assertTrue(m["CompareFailReason"])
        with self.assertRaises(TypeError):
            adump.compare_arrays(np.zeros(3, np.complex64), np.zeros(3, np.complex64))

    def test_small_magnitudes(self):
        # A gradient bug at small magnitude: the 6-decimal cells read as equal, the numbers,
        # the scale-free error and the verdict do not.
        a = np.random.default_rng(3).standard_normal(1000).astype(np.float32)
        m = adump.compare_arrays(a * 1e-7, a * 1.5e-7)
        self.assertEqual(m.cells["MaxAbsoluteError"], "0.000000")
        self.assertEqual(m.cells["CosineSimilarity"], "1.000000")
        self.assertGreater(m["MaxAbsoluteError"], 0.0)
        self.assertAlmostEqual(m["scaled_error"], 1 / 3, places=5)
        self.assertAlmostEqual(m["MaxRelativeError"], 1 / 3, places=5)
        self.assertEqual(m["verdict"], "error")
        # Rounding-sized differences pass; float16 limits are wider than float32's.
        b = a + a * np.float32(1e-6)
        self.assertEqual(adump.compare_arrays(a, b)["verdict"], "pass")
        c = (a * np.float32(1.001)).astype(np.float16)
        self.assertEqual(adump.compare_arrays(c, a.astype(np.float16))["verdict"], "pass")
        self.assertEqual(adump.compare_arrays(a * np.float32(1.001), a)["verdict"], "error")
        # Integers are exact.
        i = np.arange(10, dtype=np.int32)
        j = i.copy()
        j[9] += 1
        self.assertEqual(adump.compare_arrays(i, i)["verdict"], "pass")
        self.assertEqual(adump.compare_arrays(j, i)["verdict"], "error")

    def test_nonfinite(self):
        a = np.linspace(1, 2, 100, dtype=np.float32)
        b = a.copy()
        b[7] = np.nan
        m = adump.compare_arrays(b, a)
        self.assertEqual(m["verdict"], "error")
        self.assertEqual(m["nan_count"], (1, 0))
        self.assertEqual(m["first_nonfinite_diff"], 7)
        self.assertIn("first at index 7", m["reason"])
        self.assertTrue(math.isnan(m["CosineSimilarity"]))
        c = a.copy()
        c[50] = np.inf
        m = adump.compare_arrays(a, c)
        self.assertEqual(m["verdict"], "error")
        self.assertEqual(m["inf_count"], (0, 1))
        self.assertEqual(m["first_nonfinite_diff"], 50)
        # -inf against +inf differs; the same NaN and Inf on both sides do not, and the
        # rest is judged on the finite elements.
        d = c.copy()
        d[50] = -np.inf
        self.assertEqual(adump.compare_arrays(d, c)["nonfinite_diff_count"], 1)
        e = b.copy()
        e[50] = np.inf
        m = adump.compare_arrays(e, e.copy())
        self.assertEqual(m["verdict"], "pass", m["reason"])
        f = e.copy()
        f[60] += 1
        m = adump.compare_arrays(f, e)
        self.assertEqual(m["verdict"], "error")
        self.assertIn("finite on both sides", m["reason"])

    def test_thresholds(self):
        a = np.linspace(1, 2, 100, dtype=np.float32)
        b = a * np.float32(1.0005)             # scaled error 5e-4: a float32 warning
        self.assertEqual(adump.compare_arrays(b, a)["verdict"], "warning")
        self.assertEqual(adump.compare_arrays(b, a, thresholds={"scaled_warning": 1e-3})
                         ["verdict"], "pass")
        self.assertEqual(adump.compare_arrays(b, a, thresholds="float32.scaled=1e-4")
                         ["verdict"], "error")
        self.assertEqual(adump.compare_arrays(b, a, thresholds="float16.scaled=1e-9")
                         ["verdict"], "warning")
        with self.assertRaises(adump.ConfigError) as cm:
            adump.compare_arrays(b, a, thresholds="cosine=0.9,bogus=1")
        self.assertIn("bogus", str(cm.exception))
        with self.assertRaises(adump.ConfigError) as cm:
            adump.compare(self.my_dir, self.golden_dir, thresholds={"cosine": 2})
        self.assertIn("cosine", str(cm.exception))
        rows = adump.compare(self.my_dir, self.golden_dir,
                             thresholds="scaled=1e9,scaled_warning=1e9,max_abs=1e9,cosine=-1,"
                                        "cosine_warning=-1")
        # msprobe's rule is the floor: a cosine < 0.99 with MaxAbsErr > 0.001 stays an error.
        bad = [r for r in rows if r["verdict"] != "pass"]
        for r in bad:
            self.assertIn("floor", r["reason"])
        code, text = helpers.tool("compare", "-m", self.my_dir, "-g", self.golden_dir,
                                  "-out", helpers.tmpdir("cmp-th"), "--threshold",
                                  "float16.cosine=abc")
        self.assertEqual(code, 2, text)
        self.assertIn("float16.cosine", text)

    def test_fail_on(self):
        # Add's input 1 differs: some row is not pass; the status stays 0 unless asked.
        plain = adump.compare(self.my_dir, self.golden_dir)
        self.assertEqual(plain.summary["exit_code"], 0)
        worst = "error" if any(r["verdict"] == "error" for r in plain) else "warning"
        self.assertTrue(any(r["verdict"] == worst for r in plain))
        res = adump.compare(self.my_dir, self.golden_dir, fail_on=worst)
        self.assertEqual(res.summary["exit_code"], 101)
        res = adump.compare(self.my_dir, self.golden_dir, fail_on="warning")
        self.assertEqual(res.summary["exit_code"], 101)
        same = adump.compare(self.my_dir, self.my_dir, fail_on="warning")
        self.assertEqual(same.summary["exit_code"], 0)
        with self.assertRaises(adump.ConfigError):
            adump.compare(self.my_dir, self.golden_dir, fail_on="never")
        # The command agrees.
        code, text = helpers.tool("compare", "-m", self.my_dir, "-g", self.golden_dir,
                                  "-out", helpers.tmpdir("cmp-fail-on"), "--fail-on", worst)
        self.assertEqual(code, 101, text)

    def test_unreadable_name_said(self):
        # A file name with characters msaccucmp's pattern refuses (another writer's: adump
        # writes "f_x_"): the dump is left out as msaccucmp leaves it out, and the command
        # says so instead of passing quietly.
        a = np.arange(8, dtype=np.float32)
        dirs = []
        for tag, scale in (("cmp-name-my", 2), ("cmp-name-golden", 3)):
            top = helpers.tmpdir(tag)
            with adump.Session(top, workers=1) as s:
                st = s.stream()
                st.dump("Add", "ok", inputs=[a], outputs=[a])
                st.dump("Mul", "f(x)", inputs=[a], outputs=[a * scale])
                st.sync()
            mul = [f for f in helpers.files_below(top) if "/Mul.f_x_." in f]
            self.assertEqual(len(mul), 1, helpers.files_below(top))
            os.rename(mul[0], mul[0].replace("/Mul.f_x_.", "/Mul.f(x)."))
            dirs.append(os.path.dirname(mul[0]))
        code, text = helpers.tool("compare", "-m", dirs[0], "-g", dirs[1],
                                  "-out", helpers.tmpdir("cmp-name-out"))
        self.assertEqual(code, 0, text)
        self.assertIn("Mul.f(x).", text)
        self.assertIn("is not a dump file name", text)
        self.assertIn("1 ops (1 matched", text)



def write_npy(path, shape_text, payload):
    """A .npy file (format 1.0, <f4) whose header says 'shape': @shape_text, then @payload."""
    d = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape_text
    d += " " * (63 - (10 + len(d)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(d)) + d.encode() + payload)


class NpyShapes(unittest.TestCase):
    """`adump compare` of two .npy files refuses a shape it cannot hold: an element count
    that overflows 64 bits (2**62 x 8 wrapped to 0 and compared 16 bytes as that shape,
    exit 0, cosine 1.0), a negative dimension, more than 32 dimensions."""

    def compare(self, shape_text, payload=np.arange(4, dtype="<f4").tobytes()):
        top = helpers.tmpdir("npyshape")
        a, b = os.path.join(top, "a.npy"), os.path.join(top, "b.npy")
        write_npy(a, shape_text, payload)
        write_npy(b, shape_text, payload)
        return helpers.tool("compare", "-m", a, "-g", b, "-out", top)

    def test_overflowing_count_refused(self):
        for shape in ("(%d, 8)" % 2**62, "(%d, %d)" % (2**32, 2**32),
                      "(%d, 2, 2, 2)" % 2**62):
            code, text = self.compare(shape)
            self.assertEqual(code, 3, shape + text)
            self.assertIn("element count overflows 64 bits", text)
            self.assertNotIn("CosineSimilarity", text)

    def test_bad_dimensions_refused(self):
        for shape in ("(-1, 4)", "(%s)" % ", ".join(["1"] * 33)):
            code, text = self.compare(shape)
            self.assertEqual(code, 3, shape + text)
            self.assertIn("unsupported numpy shape", text)

    def test_good_shapes_compared(self):
        for shape in ("(2, 2)", "(4,)", "(1, 4, 1)"):
            code, text = self.compare(shape)
            self.assertEqual(code, 0, shape + text)
            self.assertIn("CosineSimilarity", text)
        code, text = self.compare("()", np.float32(3).tobytes())
        self.assertEqual(code, 0, text)

if __name__ == "__main__":
    unittest.main()
