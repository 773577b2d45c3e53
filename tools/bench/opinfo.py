"""Runs the OpInfo harness (the package ``tools/bench/opinfo/``): ``python tools/bench/opinfo.py export|check ...``."""

import sys

from opinfo.cli import main  # the package next to this script: a directory wins over this file

if __name__ == "__main__":
    sys.exit(main())
