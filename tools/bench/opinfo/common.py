"""Paths, defaults and the sample index shared by the export and check commands."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python" / "python"))
from ember.dtypes import EMBER_NAME  # noqa: E402
from ember.export import write_npz  # noqa: E402  (byte-reproducible, atomic)

PROG = "python tools/bench/opinfo.py"
HARNESS_VERSION = 1  # bump to invalidate every cached sample
REPO = Path(__file__).resolve().parents[3]
DEFAULT_CACHE = Path(os.path.expanduser("~/.cache/ember/opinfo"))
DEFAULT_REPORT_DIR = REPO / "tools" / "bench" / "results"  # opinfo_<last stage>.md
DEFAULT_EXPECTED = REPO / "tools" / "bench" / "opinfo_subset_expected.json"
DEFAULT_STAGES = "import,cpu"
DEFAULT_EMBER = REPO / "target" / "debug" / "ember"

# A CI-size run: common OpInfos (by OpInfo name; every variant of a name is taken).
SUBSET = [
    "add", "mul", "sub", "div", "exp", "log", "tanh", "sigmoid", "nn.functional.relu",
    "softmax", "log_softmax", "sum", "mean", "amax", "matmul", "mm", "bmm", "addmm",
    "cat", "stack", "transpose", "permute", "reshape", "view", "where",
    "nn.functional.layer_norm", "nn.functional.gelu", "nn.functional.embedding",
    "index_select", "gather",
]

# --dtype choices; float32 is the default run, the others sample every OpInfo that supports them.
DTYPES = ["float32", "bfloat16", "float16"]
# Report-name suffixes: opinfo_cpu.md, opinfo_cpu_bf16.md, ...
DTYPE_SUFFIX = {d: "" if d == "float32" else "_" + EMBER_NAME[d] for d in DTYPES}

# float32 first; an OpInfo that does not support it on cpu (integer/bool-only ops)
# is sampled with the first of these it supports.
FALLBACK_DTYPES = ["float32", "int64", "int32", "bool", "complex64"]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def first_line(text: str) -> str:
    for line in str(text).strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_json(path: Path, obj: Any) -> None:
    write_atomic(path, (json.dumps(obj, indent=1, sort_keys=True) + "\n").encode())


def op_id(name: str, variant: str) -> str:
    """`name` or `name.variant`: how ops are named on the command line and in reports."""
    return f"{name}.{variant}" if variant else name


def index_path(cache: Path, dtype: str = "float32") -> Path:
    """One index per --dtype (index.json for float32, as before dtypes were selectable): the
    sample files themselves share the cache, their keys include the dtype."""
    return cache / ("index.json" if dtype == "float32" else f"index_{dtype}.json")


def load_index(cache: Path, dtype: str = "float32") -> list[dict[str, Any]]:
    path = index_path(cache, dtype)
    if not path.exists():
        return []
    return json.loads(path.read_text())["entries"]


def save_index(cache: Path, entries: list[dict[str, Any]], torch_version: str, dtype: str = "float32",
               skipped: list[str] | None = None, max_samples: int | None = None) -> None:
    entries = sorted(entries, key=lambda e: (e["op"], e["variant_test_name"], e["sample_index"]))
    meta: dict[str, Any] = {
        "harness_version": HARNESS_VERSION,
        "torch_version": torch_version,
        "dtype": dtype,
        "entries": entries,
    }
    if skipped is not None:
        meta["unsupported_opinfos"] = sorted(skipped)
    if max_samples is not None:
        meta["max_samples_per_op"] = max_samples
    write_json(index_path(cache, dtype), meta)


def select_names(args: argparse.Namespace) -> set[str] | None:
    """OpInfo names / name.variant ids chosen by --subset and --ops (None: all)."""
    chosen: set[str] | None = None
    if args.subset:
        chosen = set(SUBSET)
    if args.ops:
        ops = {o.strip() for o in args.ops.split(",") if o.strip()}
        chosen = ops if chosen is None else chosen | ops
    return chosen


def matches(chosen: set[str] | None, name: str, variant: str) -> bool:
    return chosen is None or name in chosen or op_id(name, variant) in chosen
