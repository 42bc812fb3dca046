# SPDX-License-Identifier: Apache-2.0
"""How pip builds the adump package (setup.py here and at the repository root use it): the
setuptools backend (Debian's python3-setuptools) drives adump's own CMake build, which
compiles the C library into the extension (statically linked, nothing else to install) and
builds the `adump` command, shipped inside the package as adump/bin/adump and put on PATH by
the console script adump._cli:main. Offline: no build requirement beyond setuptools, wheel
and CMake with adump's Debian packages (scripts/setup.sh)."""
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension
from setuptools.command.build_ext import build_ext


def version(root):
    """The version `adump --version` prints: ADUMP_VERSION_* of include/adump/adump.h."""
    with open(os.path.join(root, "include", "adump", "adump.h")) as f:
        text = f.read()
    parts = [re.search(r"#define ADUMP_VERSION_%s (\d+)" % p, text).group(1)
             for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


class CMakeExtension(Extension):
    def __init__(self, name, root):
        super().__init__(name, sources=[], py_limited_api=True)
        self.root = root


class BuildWithCMake(build_ext):
    """Configure and build the targets adump_python and adump_tool in build_temp, then copy
    the extension and the command into the package."""

    def build_extension(self, ext):
        build = os.path.abspath(os.path.join(self.build_temp, "cmake"))
        os.makedirs(build, exist_ok=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        subprocess.check_call([
            "cmake", "-S", ext.root, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
            "-DADUMP_BUILD_TESTS=OFF", "-DADUMP_BUILD_BENCH=OFF",
            "-DADUMP_BUILD_EXAMPLES=OFF", "-DADUMP_ENABLE_TESTPOINTS=OFF",
            "-DPython3_EXECUTABLE=" + sys.executable])
        subprocess.check_call(["cmake", "--build", build, "-j", jobs, "--target",
                               "adump_python", "adump_tool"])
        so = os.path.join(build, "python", "adump", "_adump.abi3.so")
        if not os.path.exists(so):
            raise RuntimeError("CMake did not build the extension (%s): Python's development "
                               "files (python3-dev) missing?" % so)
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(so, dest)
        bindir = os.path.join(os.path.dirname(dest), "bin")
        os.makedirs(bindir, exist_ok=True)
        tool = os.path.join(bindir, "adump")
        shutil.copyfile(os.path.join(build, "tools", "adump"), tool)
        os.chmod(tool, 0o755)


def setup_kwargs(root, package_dir):
    """setup() arguments; @root: the repository, @package_dir: python/adump relative to the
    directory pip builds in."""
    return dict(
        version=version(root),
        packages=["adump"],
        package_dir={"adump": package_dir},
        package_data={"adump": ["py.typed", "*.pyi"]},
        ext_modules=[CMakeExtension("adump._adump", root)],
        cmdclass={"build_ext": BuildWithCMake},
        options={"bdist_wheel": {"py_limited_api": "cp311"}},
        zip_safe=False,
    )
