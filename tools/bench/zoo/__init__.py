"""The model zoo (issue 19): many architectures, random weights, through every Ember target.

``python tools/bench/zoo.py --help`` tells what it does (the text is ``cli``'s docstring).
Modules: ``common`` (constants, paths, the log, cache-key helpers), ``models`` (the specs and
how a model is built: configs, inputs), ``worker`` (the export worker process and its handle),
``run`` (ember on the targets, the cache keys, ``Run``), ``report`` (zoo.md and zoo.png),
``cli`` (the options and ``main``); ``tools/bench/zoo.py`` runs ``cli.main``.
"""

from .common import SUBSETS, safe_name

__all__ = ["SUBSETS", "safe_name"]
