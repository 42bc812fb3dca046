# SPDX-License-Identifier: Apache-2.0
# `pip install .` at the repository root: the same package as `pip install ./python`.
import os
import sys

from setuptools import setup

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "python"))
from adump_build import setup_kwargs  # noqa: E402

setup(**setup_kwargs(here, "python/adump"))
