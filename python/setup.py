# SPDX-License-Identifier: Apache-2.0
# `pip install ./python`: metadata in pyproject.toml, the build in adump_build.py.
import os
import sys

from setuptools import setup

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from adump_build import setup_kwargs  # noqa: E402

setup(**setup_kwargs(os.path.dirname(here), "adump"))
