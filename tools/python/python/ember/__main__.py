"""`python -m ember ...`: the `ember` command line (see `ember._cli`)."""

from ._cli import main

main()
