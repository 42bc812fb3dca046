# SPDX-License-Identifier: Apache-2.0
"""The package installs as Python packages do: offline into a venv with pip (setuptools
driving adump's CMake build), with its version, metadata, type stubs and the `adump`
command; and `cmake --install --prefix P` puts the Python part under P. Builds the library
once (a minute or two): registered for the plain build only, every step under a timeout."""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STEP_TIMEOUT = 600


def run(args, **kw):
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)             # the build tree's package must not be seen
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=STEP_TIMEOUT, env=env, stdin=subprocess.DEVNULL, **kw)
    return p.returncode, p.stdout


class VenvInstall(unittest.TestCase):
    def test_pip_install(self):
        try:
            import setuptools  # noqa: F401
            import venv  # noqa: F401
        except ImportError as e:
            self.skipTest("no setuptools/venv: %s" % e)
        top = helpers.tmpdir("venv")
        v = os.path.join(top, "v")
        code, out = run([sys.executable, "-m", "venv", "--system-site-packages", v])
        if code != 0 and "ensurepip" in out:
            self.skipTest("venv without pip (python3-venv missing): %s" % out[-300:])
        self.assertEqual(code, 0, out)
        code, out = run([os.path.join(v, "bin", "pip"), "install", "--no-build-isolation",
                         "--no-index", "--no-deps", os.path.join(SRC, "python")], cwd=top)
        self.assertEqual(code, 0, out[-4000:])
        py = os.path.join(v, "bin", "python")
        code, out = run([py, "-c", "import adump, os; print(adump.__version__); "
                         "print(os.path.realpath(adump._adump.__file__))"], cwd=top)
        self.assertEqual(code, 0, out)
        version, ext = out.split()
        self.assertTrue(ext.startswith(os.path.realpath(v)), ext)   # inside the venv
        code, out = run([os.path.join(v, "bin", "adump"), "--version"], cwd=top)
        self.assertEqual((code, out.strip()), (0, "adump " + version))
        code, out = run([os.path.join(v, "bin", "pip"), "show", "-f", "adump"], cwd=top)
        self.assertEqual(code, 0, out)
        self.assertIn("Version: " + version, out)
        for f in ("adump/py.typed", "adump/_adump.pyi", "adump/bin/adump"):
            self.assertIn(f, out)
        # The installed package works: a capture read back and verified by its command.
        code, out = run([py, "-c", "import adump, numpy as np, sys\n"
                         "with adump.Session(sys.argv[1]) as s:\n"
                         "    st = s.stream(); st.dump('Add', 'a', inputs=[np.arange(4.0)])\n"
                         "d, = adump.walk(sys.argv[1]); print(d.inputs[0].sum())",
                         os.path.join(top, "dump")], cwd=top)
        # The last line: where io_uring is refused the library's fallback notice (a log line
        # on stderr) comes first.
        self.assertEqual((code, out.strip().splitlines()[-1:]), (0, ["6.0"]), out)
        code, out = run([os.path.join(v, "bin", "adump"), "verify", os.path.join(top, "dump")])
        self.assertEqual(code, 0, out)

    def test_cmake_install_prefix(self):
        build = os.environ.get("ADUMP_BUILD_DIR")
        if not build:
            self.skipTest("ADUMP_BUILD_DIR not set")
        prefix = os.path.join(helpers.tmpdir("prefix"), "p")
        code, out = run(["cmake", "--install", build, "--component", "python", "--prefix",
                         prefix])
        self.assertEqual(code, 0, out)
        found = [d for d, _, fs in os.walk(prefix) if "_adump.abi3.so" in fs]
        self.assertEqual(len(found), 1, out)
        site = os.path.dirname(found[0])
        self.assertTrue(site.startswith(os.path.join(prefix, "lib", "python")), site)
        env = dict(os.environ, PYTHONPATH=site)
        p = subprocess.run([sys.executable, "-c", "import adump; print(adump.__file__)"],
                           stdout=subprocess.PIPE, text=True, env=env, timeout=60,
                           cwd=prefix)
        self.assertTrue(p.stdout.startswith(site), p.stdout)


if __name__ == "__main__":
    unittest.main()
