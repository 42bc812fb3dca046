# SPDX-License-Identifier: Apache-2.0
"""adump.report against `adump report`: the page of a compare result directory is the page
the command writes for it, Chart.js inlined; a result that is not one and a Chart.js that is
missing raise the documented errors and leave no page behind. (What the page shows, names
holding markup among it, is tested in Chromium: tests/report/test_report_page.c.)"""
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

import adump  # noqa: E402

CHARTJS = "/usr/share/javascript/chart.js/chart.min.js"


def capture(tag, scale):
    top = helpers.tmpdir(tag)
    a = np.linspace(-1, 1, 64, dtype=np.float32)
    with adump.Session(top, workers=1) as s:
        st = s.stream()
        st.dump("Add", "layer.0.add", inputs=[a], outputs=[a * 2])
        st.dump("Mul", "layer.1.mul", inputs=[a], outputs=[a * scale])
        st.sync()
    return os.path.dirname(helpers.files_below(top)[0])


@unittest.skipUnless(os.path.exists(CHARTJS), "Debian's libjs-chart.js is not installed")
class Report(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.my, cls.golden = capture("rep-my", 3.0), capture("rep-golden", 2.0)
        cls.out = helpers.tmpdir("rep-out")
        adump.compare(cls.my, cls.golden, out=cls.out)

    def test_page_is_the_commands(self):
        page = adump.report(self.out)
        self.assertEqual(page, os.path.join(self.out, "report.html"))
        with open(page, "rb") as f:
            mine = f.read()
        cli = os.path.join(helpers.tmpdir("rep-cli"), "cli.html")
        code, text = helpers.tool("report", "--quiet", "-o", cli, self.out)
        self.assertEqual(code, 0, text)
        with open(cli, "rb") as f:
            theirs = f.read()
        self.assertEqual(mine, theirs)
        # Chart.js inlined; both ops there.
        with open(CHARTJS, "rb") as f:
            self.assertIn(f.read()[:200], mine)
        self.assertIn(b"layer_0_add", mine)     # the CSV names ops by their file names
        self.assertIn(b"layer_1_mul", mine)
        self.assertNotIn(b"http://", mine.replace(b"http://www.w3.org", b""))

    def test_out_and_chartjs_arguments(self):
        page = os.path.join(helpers.tmpdir("rep-arg"), "p.html")
        self.assertEqual(adump.report(self.out, page, chartjs=CHARTJS), page)
        self.assertGreater(os.path.getsize(page), os.path.getsize(CHARTJS))

    def test_not_a_result(self):
        d = helpers.tmpdir("rep-bad")
        bad = os.path.join(d, "result_20260101000000.csv")
        with open(bad, "w") as f:
            f.write("name,value\nx,1\n")
        with self.assertRaises(adump.CorruptError) as cm:
            adump.report(bad)
        self.assertIn("result_20260101000000.csv", str(cm.exception))
        self.assertFalse(os.path.exists(bad + ".html"))
        with self.assertRaises(OSError):
            adump.report(os.path.join(d, "missing"))

    def test_chartjs_missing(self):
        page = os.path.join(helpers.tmpdir("rep-nojs"), "p.html")
        with self.assertRaises(OSError) as cm:
            adump.report(self.out, page, chartjs="/nonexistent/chart.js")
        self.assertIn("chart.js", str(cm.exception))
        self.assertEqual(os.listdir(os.path.dirname(page)), [])


if __name__ == "__main__":
    unittest.main()
