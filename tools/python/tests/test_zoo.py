"""The model zoo's CI subset: a few small transformers models through every target.

Runs ``tools/bench/zoo.py --subset ci`` (gpt2, llama, bert, t5, vit with random weights
from small configs) into a temporary directory, cache included, so the committed
``tools/bench/results/zoo.md`` is not touched, and asserts that every model passes on cpu,
tpu and trainium (outputs within the dtype's tolerance of eager) and that the report is
written. Measured: 80 s of CPU time, 3.8 min wall on 2 cores shared with a full zoo run. Needs torch, transformers, jax and a built
``target/debug/ember`` (``cargo build -p ember-tools``); torchvision is not needed.
``EMBER_ZOO_JOBS`` sets the number of models run in parallel (default 1).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
ZOO = REPO / "tools" / "bench" / "zoo.py"
EMBER = REPO / "target" / "debug" / "ember"
TARGETS = ["cpu", "tpu", "trainium"]


def test_ci_subset_passes_everywhere(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("jax")
    if not EMBER.exists():
        pytest.fail(f"{EMBER} is missing: run `cargo build -p ember-tools` first")
    cache, out = tmp_path / "cache", tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, str(ZOO), "--subset", "ci", "--ember", str(EMBER), "--cache", str(cache), "--out", str(out),
         "--jobs", os.environ.get("EMBER_ZOO_JOBS", "1")],
        cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"zoo.py failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"

    sys.path.insert(0, str(ZOO.parent))
    import zoo

    names = zoo.SUBSETS["ci"]
    failures = []
    for name in names:
        res = json.loads((cache / "results" / f"{zoo.safe_name(name)}.json").read_text())
        if res["export"]["status"] != "exported":
            failures.append(f"{name}: {res['export']['status']}: {res['export'].get('error')}")
            continue
        for target in TARGETS:
            r = res["targets"].get(target)
            if r is None or r["status"] != "pass":
                failures.append(f"{name} on {target}: {r and r['status']}: {r and r.get('error')}")
    assert not failures, "zoo subset models that do not pass:\n" + "\n".join(failures)

    report = (out / "zoo.md").read_text()
    assert (out / "zoo.png").stat().st_size > 0
    for name in names:
        assert f"| {name} |" in report, f"{name} has no row in zoo.md"
    assert "PARTIAL" not in report
