"""Constants, paths, the log and the small helpers every part of the zoo shares."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parent  # tools/bench/zoo/
HERE = PACKAGE.parent  # tools/bench/
ROOT = HERE.parent.parent
PYPKG = ROOT / "tools" / "python" / "python"
SCRIPT = HERE / "zoo.py"  # the entry script (also the export worker's, with --_worker)
sys.path[:0] = [str(HERE), str(PYPKG)]  # opinfo (a sibling package) and ember

HARNESS_VERSION = 1  # bump to invalidate every cached result
TARGETS = ["cpu", "tpu", "trainium"]
DEFAULT_CACHE = Path(os.path.expanduser("~/.cache/ember/zoo"))
DEFAULT_OUT = HERE / "results"
EXPORT_TIMEOUT = 300.0
COMPILE_TIMEOUT = 300.0
RUN_TIMEOUT = 300.0
THREADS = 2  # per ember process (RAYON_NUM_THREADS) and torch in the export worker
# Random weights of a 150M-parameter model are 600 MB per copy (eager, export, weights.bin);
# bigger builders (vit_h_14, regnet_y_128gf) are skipped, not narrowed. 150M keeps the VGGs,
# whose classifier alone is 120M.
MAX_PARAMS = 150_000_000
# The CI subset: small models that pass on every target in a few seconds each.
SUBSETS = {"ci": ["hf/gpt2", "hf/llama", "hf/bert", "hf/t5", "hf/vit"]}

STATUSES = ["pass", "wrong", "compile error", "run error", "panic", "timeout", "export error"]
MARK = "@@zoo@@ "  # prefix of the worker's result lines (models may print to stdout)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _exc_line(exc: BaseException) -> str:
    """`Type: first line`: the first line of a Python exception, where it usually says what (and
    the next one when the first only announces it, ending in a colon)."""
    lines = [l.strip() for l in str(exc).strip().splitlines() if l.strip()]
    first = " ".join(lines[:2]) if len(lines) > 1 and lines[0].endswith(":") else (lines[0] if lines else "")
    return f"{type(exc).__name__}: {first}"[:300]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def key_of(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def safe_name(name: str) -> str:
    return name.replace("/", "__")


def sources_sha() -> str:
    """A fingerprint of all of the zoo's Python: the entry script and every module of this
    package (--strict-cache)."""
    files = [SCRIPT, *sorted(PACKAGE.glob("*.py"))]
    return key_of([[str(p.relative_to(HERE)), sha256_file(p)[:16]] for p in files])
