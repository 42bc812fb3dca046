# SPDX-License-Identifier: Apache-2.0
"""adump.report against `adump report`: the page of a compare result directory is the page
the command writes for it, Chart.js inlined; a result that is not one and a Chart.js that is
missing raise the documented errors and leave no page behind; a statistics capture of
adump.torch over steps (CANN's CSVs and msprobe's dump.json) gives the series page, the NaN's
step and a spike marked. (What the page shows, names holding markup among it, is tested in
Chromium: tests/report/test_report_page.c.)"""
import json
import os
import re
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
        # The page says when it was written: SOURCE_DATE_EPOCH pins it, so the two writings
        # (a second apart, at times) give the same bytes.
        os.environ["SOURCE_DATE_EPOCH"] = "1767225600"
        try:
            page = adump.report(self.out)
            cli = os.path.join(helpers.tmpdir("rep-cli"), "cli.html")
            code, text = helpers.tool("report", "--quiet", "-o", cli, self.out)
        finally:
            del os.environ["SOURCE_DATE_EPOCH"]
        self.assertEqual(page, os.path.join(self.out, "report.html"))
        self.assertEqual(code, 0, text)
        with open(page, "rb") as f:
            mine = f.read()
        with open(cli, "rb") as f:
            theirs = f.read()
        self.assertIn(b'"generated":"2026-01-01 00:00:00 UTC"', mine)
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


try:
    import torch
    from torch import nn
    import adump.torch  # noqa: F401
except ImportError:
    torch = None

NAN_STEP, SPIKE_STEP, STEPS = 4, 6, 8


def page_data(path):
    """The JSON a page holds in #adump-data."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r'<script type="application/json" id="adump-data">(.*?)</script>', text, re.S)
    return json.loads(m.group(1))


def without_time(data):
    return re.sub(rb'"generated":"[^"]*"', b"", data)


@unittest.skipUnless(os.path.exists(CHARTJS), "Debian's libjs-chart.js is not installed")
@unittest.skipUnless(torch is not None, "torch is not installed")
class Series(unittest.TestCase):
    """adump.torch's content="stats" capture over STEPS steps of a small model whose input has a
    NaN at NAN_STEP (the training carries it no further: the step's update is skipped) and is
    a thousand times larger at SPIKE_STEP."""

    def capture(self, fmt, **kw):
        top = helpers.tmpdir("rep-series-" + fmt)
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        kw = kw or {"content": "stats"}
        with adump.torch.capture(model, top, format=fmt, backward=False, **kw) as cap:
            for step in range(STEPS):
                x = torch.randn(3, 4)
                if step == NAN_STEP:
                    x[0, 1] = float("nan")
                if step == SPIKE_STEP:
                    x = x * 1000
                with torch.no_grad():
                    model(x)
                cap.step()
        self.assertEqual(cap.losses, [])
        return top

    def check(self, top, name):
        page = adump.report(top)
        self.assertEqual(page, os.path.join(top, "report.html"))
        cli = os.path.join(helpers.tmpdir("rep-series-cli"), "cli.html")
        code, text = helpers.tool("report", "--quiet", "-o", cli, top)
        self.assertEqual(code, 0, text)
        with open(page, "rb") as a, open(cli, "rb") as b:
            self.assertEqual(without_time(a.read()), without_time(b.read()))
        # The page inside the capture is no dump to the readers.
        self.assertGreater(len(list(adump.walk(top))), 0)
        code, text = helpers.tool("verify", top)
        self.assertIn(" 0 bad,", text)       # (a CSV-only capture has no dump file: status 1)
        self.assertNotIn("report.html", text)
        data = page_data(page)
        self.assertEqual(data["kind"], "series")
        series = {s["name"]: s for s in data["series"]}
        self.assertIn(name, series, sorted(series))
        points = series[name]["points"]
        self.assertEqual([p[0] for p in points], list(range(STEPS)))
        flagged = {p[0]: p[7] for p in points if p[7]}
        self.assertEqual(flagged, {NAN_STEP: 1, SPIKE_STEP: 2}, points)
        self.assertIn("is NaN", points[NAN_STEP][8])
        self.assertIn("the mean of its previous 5 steps", points[SPIKE_STEP][8])
        # The ReLU after it: NaN at NAN_STEP too, and nothing else is NaN anywhere else.
        for s in data["series"]:
            for p in s["points"]:
                if p[7] & 1:
                    self.assertEqual(p[0], NAN_STEP, (s["name"], p))

    def test_cann_stats(self):
        self.check(self.capture("cann"), "Module_0_Linear_forward_0.input.0")

    def test_msprobe_stats(self):
        self.check(self.capture("msprobe"), "Module.0.Linear.forward.0.input.0")

    def test_flight_recorder(self):
        # The same run under the flight recorder: the statistics of every step on disk, the
        # window of the NaN step beneath (tensors, and a trigger.json in each of its step
        # directories). The page draws the statistics once (the window's are not read a
        # second time: no "#2" series) and tells the trigger once, at its step.
        for fmt, name in (("cann", "Module_0_Linear_forward_0.input.0"),
                          ("msprobe", "Module.0.Linear.forward.0.input.0")):
            with self.subTest(fmt=fmt):
                top = self.capture(fmt, window_steps=2)
                self.assertTrue(os.path.isdir(os.path.join(top, "window-%d" % NAN_STEP)))
                data = page_data(adump.report(top))
                names = [x["name"] for x in data["series"]]
                self.assertIn(name, names)
                self.assertFalse([n for n in names if "#" in n], names)
                self.assertEqual(len(data["triggers"]), 1, data["triggers"])
                t = data["triggers"][0]
                self.assertEqual((t["step"], t["rule"]), (NAN_STEP, "nonfinite"), t)

    def test_odd_module_name(self):
        # add_module takes any name, with characters msaccucmp's file pattern refuses: the
        # file names replace them, the series view still draws the op (it was once dropped
        # unsaid), and the name reaches the page as data, never as markup.
        odd = "<img src=x onerror=alert(1)>"
        top = helpers.tmpdir("rep-series-odd")
        model = nn.Sequential()
        model.add_module("fc", nn.Linear(4, 2))
        model.add_module(odd, nn.ReLU())
        with adump.torch.capture(model, top, content="stats", backward=False) as cap:
            for _ in range(3):
                with torch.no_grad():
                    model(torch.randn(3, 4))
                cap.step()
        data = page_data(adump.report(top))
        names = {s["name"] for s in data["series"]}
        # (every byte outside [A-Za-z0-9_-] made "_" in the file name: a superset of CANN's rule)
        self.assertIn("Module__img_src_x_onerror_alert_1___ReLU_forward_0.output.0", names,
                      sorted(names))
        self.assertEqual(len(names), 4, sorted(names))


if __name__ == "__main__":
    unittest.main()
