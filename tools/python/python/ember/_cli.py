"""The `ember` command of the wheel: the Rust command line (`tools/src/cli.rs`), run in this
process by the native extension, so an installed package needs no separate binary."""

from __future__ import annotations

import os
import signal
import sys


def main() -> None:
    from . import _native

    # While Rust runs, Python would only note a Ctrl-C; the default action stops a long compile
    # at once, as it does the `ember` binary.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # `ember run` of a tpu or trainium artifact runs `python -m ember.xla`: this interpreter,
    # whose environment has the package, unless the user chose another.
    os.environ.setdefault("EMBER_PYTHON", sys.executable)
    sys.stdout.flush()
    sys.exit(_native().cli_main(["ember", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
