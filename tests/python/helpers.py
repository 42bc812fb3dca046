# SPDX-License-Identifier: Apache-2.0
"""Shared bits of the Python tests: scratch directories, the adump command, two ranks in
processes of their own, and the zero-copy tests' model."""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import unittest


def tmpdir(tag):
    base = os.environ.get("ADUMP_TEST_TMP", tempfile.gettempdir())
    os.makedirs(base, exist_ok=True)
    path = tempfile.mkdtemp(prefix="py-%s-" % tag, dir=base)
    if not os.environ.get("ADUMP_TEST_KEEP"):
        atexit.register(shutil.rmtree, path, True)
    return path


def tool(*args):
    """Run the adump command; returns (exit code, stdout + stderr)."""
    exe = os.environ.get("ADUMP_TOOL")
    if not exe:
        raise unittest.SkipTest("ADUMP_TOOL not set")
    p = subprocess.run([exe] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    return p.returncode, p.stdout


def run_ranks(script, args, timeout, world=2):
    """Run `python3 @script --worker <rank> @args...` for each rank at once, RANK left out of
    their environment; returns [(exit code, output)] by rank. A rank that outlives @timeout
    gets every rank killed and TimeoutExpired raised."""
    env = dict(os.environ)
    env.pop("RANK", None)
    procs = [subprocess.Popen([sys.executable, script, "--worker", str(r)] + list(args),
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for r in range(world)]
    outs = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
        outs.append((p.returncode, out.decode(errors="replace")))
    return outs


def files_below(top):
    out = []
    for d, _, fs in os.walk(top):
        out += [os.path.join(d, f) for f in fs]
    return sorted(out)


def fc_inplace_relu():
    """Linear(256, 2048) then ReLU(inplace=True): the ReLU changes fc's output right after fc's
    dump was taken, the zero-copy case. Imports torch only when called."""
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(256, 2048)
            self.act = nn.ReLU(inplace=True)

        def forward(self, x):
            return self.act(self.fc(x))
    return Net()
