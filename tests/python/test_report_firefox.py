# SPDX-License-Identifier: Apache-2.0
"""Issue 33: the report pages open from file:// in Firefox too. A compare page (a NaN in one
side's output) and a statistics series page are opened in headless Firefox (Debian's
firefox-esr, a fresh profile): its screenshot must show the page the script drew (the answer
box's error border, which without the script stays grey), the browser must report no error of
the page, and no request of the page may reach the network (every http/https request goes
through a proxy this test listens as; Firefox's own services are told apart by host).
Screenshots stay in <build>/test-output/report/. Exits 77 without firefox-esr."""
import os
import shutil
import socket
import subprocess
import sys
import threading
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

import adump  # noqa: E402

FIREFOX = "/usr/bin/firefox-esr"
CHARTJS = "/usr/share/javascript/chart.js/chart.min.js"
if not os.access(FIREFOX, os.X_OK):
    print("test_report_firefox: skipped: %s is missing (Debian: apt install firefox-esr; "
          "scripts/setup.sh installs it)" % FIREFOX)
    sys.exit(77)
if not os.path.exists(CHARTJS):
    print("test_report_firefox: skipped: %s is missing (apt install libjs-chart.js)" % CHARTJS)
    sys.exit(77)
try:
    from PIL import Image
except ImportError:
    print("test_report_firefox: skipped: python3-pil is missing (reads the screenshots)")
    sys.exit(77)

# The answer box's border when the first divergence is an error (page.css #answer.v-error).
ERROR_RED = (0xd6, 0x27, 0x28)
# Hosts of Firefox's own background services: not the page's requests.
OWN_HOSTS = ("mozilla.com", "mozilla.org", "mozilla.net", "firefox.com", "mozaws.net",
             "mozgcp.net", "digicert.com", "getpocket.com")


class Proxy:
    """Accepts connections on 127.0.0.1 and records each request's first line (CONNECT
    host:443 or GET http://host/...), then closes: nothing is ever fetched."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.lines = []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    self.lines.append(conn.recv(4096).split(b"\r\n", 1)[0].decode("latin-1"))
                except OSError:
                    pass

    def page_requests(self):
        out = []
        for line in self.lines:
            parts = line.split()
            target = parts[1] if len(parts) > 1 else line
            host = target.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0]
            if not any(host == h or host.endswith("." + h) for h in OWN_HOSTS):
                out.append(line)
        return out

    def close(self):
        self.sock.close()


def open_in_firefox(page, shot, work, proxy):
    """Firefox's screenshot of file://@page into @shot; its output (stdout and stderr)."""
    page, shot, work = os.path.abspath(page), os.path.abspath(shot), os.path.abspath(work)
    profile = os.path.join(work, "profile")
    shutil.rmtree(profile, ignore_errors=True)
    os.makedirs(profile)
    prefs = {
        "devtools.console.stdout.content": True,   # the page's console on stdout
        "browser.dom.window.dump.enabled": True,
        "network.proxy.type": 1,
        "network.proxy.http": "127.0.0.1", "network.proxy.http_port": proxy.port,
        "network.proxy.ssl": "127.0.0.1", "network.proxy.ssl_port": proxy.port,
        "network.proxy.no_proxies_on": "",
        "network.proxy.allow_hijacking_localhost": True,
        "network.captive-portal-service.enabled": False,
        "network.connectivity-service.enabled": False,
        "app.update.enabled": False, "toolkit.telemetry.enabled": False,
        "datareporting.healthreport.uploadEnabled": False,
        "datareporting.policy.dataSubmissionEnabled": False,
        "browser.safebrowsing.malware.enabled": False,
        "browser.safebrowsing.phishing.enabled": False,
        "browser.shell.checkDefaultBrowser": False,
        "extensions.pocket.enabled": False,
    }
    with open(os.path.join(profile, "user.js"), "w") as f:
        for k, v in prefs.items():
            v = ("true" if v else "false") if isinstance(v, bool) else \
                str(v) if isinstance(v, int) else '"%s"' % v
            f.write('user_pref("%s", %s);\n' % (k, v))
    env = dict(os.environ, HOME=work, MOZ_HEADLESS="1")
    res = subprocess.run([FIREFOX, "--headless", "--no-remote", "--profile", profile,
                          "--window-size=1280,1000", "--screenshot", shot,
                          "file://" + page], env=env, capture_output=True, timeout=120)
    text = (res.stdout + res.stderr).decode("utf-8", "replace")
    return res.returncode, text


def red_pixels(shot, rows):
    """Pixels of ERROR_RED in the screenshot's first @rows rows."""
    img = np.asarray(Image.open(shot).convert("RGB"))[:rows]
    return int(np.all(img == np.array(ERROR_RED, np.uint8), axis=2).sum())


def capture(tag, scale, nan):
    top = helpers.tmpdir(tag)
    a = np.linspace(-1, 1, 64, dtype=np.float32)
    out = a * scale
    if nan:
        out[5] = np.nan
    with adump.Session(top, workers=1) as s:
        st = s.stream()
        st.dump("Add", "layer.0.add", inputs=[a], outputs=[a * 2])
        st.dump("Mul", "layer.1.mul", inputs=[a], outputs=[out])
        st.sync()
    return os.path.dirname(helpers.files_below(top)[0])


class Firefox(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.proxy = Proxy()
        build = os.path.dirname(os.environ.get("ADUMP_TEST_TMP", helpers.tmpdir("ff")))
        cls.shots = os.path.join(build, "test-output", "report")
        os.makedirs(cls.shots, exist_ok=True)

    @classmethod
    def tearDownClass(cls):
        cls.proxy.close()

    def check(self, page, name):
        work = helpers.tmpdir("ff-" + name)
        shot = os.path.join(self.shots, "firefox_%s.png" % name)
        if os.path.exists(shot):
            os.unlink(shot)
        code, text = open_in_firefox(page, shot, work, self.proxy)
        self.assertEqual(code, 0, text)
        self.assertTrue(os.path.exists(shot), text)
        # The page's own errors name its file:// address; Firefox's own services do not.
        mine = [ln for ln in text.splitlines() if "file://" in ln and "Screenshot" not in ln]
        self.assertEqual(mine, [], text)
        # The script drew the answer: its box is red-bordered (an error), not the grey box
        # the page has before its script runs.
        self.assertGreater(red_pixels(shot, 400), 1000, shot)
        self.assertEqual(self.proxy.page_requests(), [], self.proxy.lines)

    def test_compare_page(self):
        my, golden = capture("ff-my", 3.0, True), capture("ff-golden", 3.0, False)
        out = helpers.tmpdir("ff-out")
        adump.compare(my, golden, out=out)
        self.check(adump.report(out), "compare")

    def test_series_page(self):
        top = helpers.tmpdir("ff-series")
        a = np.linspace(-1, 1, 64, dtype=np.float32)
        with adump.Session(top, workers=1, content="stats") as s:
            st = s.stream()
            for step in range(5):
                st.set_dir("step%d/rank0" % step)
                b = a.copy()
                if step == 3:
                    b[1] = np.nan
                st.dump("Mul", "layer.mul", inputs=[a], outputs=[b])
            st.sync()
        self.check(adump.report(top), "series")


if __name__ == "__main__":
    unittest.main()
