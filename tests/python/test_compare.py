# SPDX-License-Identifier: Apache-2.0
"""adump.compare and adump.compare_arrays against the adump command: two small captures (same
ops, one tensor perturbed), the rows checked cell by cell against the CSV `adump compare`
writes for the same pair; bad paths and algorithms."""
import csv
import os
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
        keys = list(rows[0])
        self.assertEqual(len(keys), len(header))          # no key lost to the repeats
        for row, want in zip(rows, cells):
            self.assertEqual([row[k] for k in keys], want)
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
                self.assertLess(float(r["CosineSimilarity"]), 1.0)
                self.assertGreater(float(r["MaxAbsoluteError"]), 2.0)
            else:
                self.assertEqual(r["CosineSimilarity"], "1.000000", r)
                self.assertEqual(r["MaxAbsoluteError"], "0.000000", r)
        self.assertEqual(rows.summary["first_divergent_row"], rows.index(perturbed[0]))

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
        self.assertEqual(rows[0]["CosineSimilarity"], "1.000000")

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
                self.assertEqual(m[alg], row[alg], (name, alg))
            self.assertEqual(m["CompareFailReason"], row["CompareFailReason"])
        m = adump.compare_arrays(self.mine["d"], self.golden["d"])
        self.assertLess(float(m["CosineSimilarity"]), 1.0)
        m = adump.compare_arrays(self.mine["a"], self.mine["a"][:, ::2])   # 32 vs 16 elements
        self.assertEqual(m["CosineSimilarity"], "NaN")
        self.assertTrue(m["CompareFailReason"])
        with self.assertRaises(TypeError):
            adump.compare_arrays(np.zeros(3, np.complex64), np.zeros(3, np.complex64))


if __name__ == "__main__":
    unittest.main()
