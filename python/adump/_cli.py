# SPDX-License-Identifier: Apache-2.0
"""The `adump` command of a pip-installed package: the C program built with the package
(adump/bin/adump), run in place of this process."""
import os
import sys


def main():
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "adump")
    if not os.access(exe, os.X_OK):
        sys.stderr.write("adump: %s is missing: this copy of the package was not installed by "
                         "pip (use build/tools/adump)\n" % exe)
        return 127
    os.execv(exe, [exe] + sys.argv[1:])
    return 127


if __name__ == "__main__":
    sys.exit(main())
