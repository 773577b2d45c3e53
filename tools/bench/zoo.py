"""Runs the model zoo (the package ``tools/bench/zoo/``): ``python tools/bench/zoo.py --help``."""

import sys

from zoo.cli import main  # the package next to this script: a directory wins over this file

if __name__ == "__main__":
    sys.exit(main())
