"""CI subset of the OpInfo harness: regressions of Ember's CPU target on common ops.

Runs ``tools/bench/opinfo.py`` on the ``--subset`` OpInfos (36 OpInfo variants, ~230
samples)::

    python tools/bench/opinfo.py export --subset            # cached in ~/.cache/ember/opinfo
    python tools/bench/opinfo.py check  --subset --stages import,cpu --json ...

and compares every sample's pass/fail with the committed expectations in
``tools/bench/opinfo_subset_expected.json``:

- a sample expected to ``pass`` that no longer passes fails the test (a regression);
- a sample that passes but is expected to fail is only printed (run pytest with ``-s``
  to see it): update the file with
  ``python tools/bench/opinfo.py check --subset --write-expected`` and commit it.

Export is cached (content-addressed by sample and torch version), so only the first run
on a machine pays for it (~90 s with 2 jobs; the test works from an empty cache);
afterwards the test takes ~30 s (compile + run of each sample with 2 jobs). It needs
torch and a built ``target/debug/ember`` (``cargo build -p ember-tools``).

Marker: ``opinfo``. Select it with ``pytest -m opinfo tools/python/tests``, leave it out
with ``-m "not opinfo"``. Environment: ``EMBER_OPINFO_CACHE`` overrides the sample
cache directory, ``EMBER_OPINFO_JOBS`` the number of parallel jobs (default 2).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.opinfo

REPO = Path(__file__).resolve().parents[3]
HARNESS = REPO / "tools" / "bench" / "opinfo.py"
EXPECTED = REPO / "tools" / "bench" / "opinfo_subset_expected.json"
EMBER = REPO / "target" / "debug" / "ember"
CACHE = Path(os.environ.get("EMBER_OPINFO_CACHE", "~/.cache/ember/opinfo")).expanduser()
JOBS = os.environ.get("EMBER_OPINFO_JOBS", "2")
UPDATE_HINT = f"python {HARNESS.relative_to(REPO)} check --subset --write-expected"


def harness(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, str(HARNESS), *args, "--cache", str(CACHE), "--jobs", JOBS],
                          cwd=REPO, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"opinfo.py {args[0]} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def test_subset_has_no_regressions(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("numpy")
    if not EMBER.exists():
        pytest.fail(f"{EMBER} is missing: run `cargo build -p ember-tools` first")
    expected = json.loads(EXPECTED.read_text())
    stages = ",".join(expected["stages"])

    harness("export", "--subset", timeout=600)
    results = tmp_path / "results.json"
    harness("check", "--subset", "--stages", stages, "--ember", str(EMBER), "--report", "",
            "--json", str(results), "--workdir", str(tmp_path / "work"), timeout=600)
    got = json.loads(results.read_text())

    outcome: dict[str, str] = {}
    for s in got["samples"]:
        if s["status"] != "exported":
            outcome[s["id"]] = f"not exported: {s['error']}"
        elif s["check"]["ok"]:
            outcome[s["id"]] = "pass"
        else:
            c = s["check"]
            outcome[s["id"]] = f"{c['stage']}: {c['error']}  [key {s['key']}]"

    want_pass = {sid for sid, v in expected["samples"].items() if v == "pass"}
    regressions = sorted(sid for sid in want_pass if outcome.get(sid) != "pass")
    new_passes = sorted(sid for sid, v in outcome.items() if v == "pass" and sid not in want_pass)

    print(f"\nopinfo subset: {got['passed']} passed, {got['failed']} failed "
          f"(expected {expected['passed']} passed, {expected['failed']} failed)")
    if new_passes:
        print(f"{len(new_passes)} sample(s) pass that {EXPECTED.name} expects to fail; "
              f"update it with `{UPDATE_HINT}`:")
        for sid in new_passes:
            print(f"  {sid}")
    if regressions:
        lines = [f"  {sid}: {outcome.get(sid, 'missing from this run (not sampled any more?)')}"
                 for sid in regressions]
        note = ""
        if expected.get("torch_version") != _torch_version():
            note = (f"\n(the expectations were recorded with torch {expected.get('torch_version')}, "
                    f"this is torch {_torch_version()}: samples may differ)")
        pytest.fail(f"{len(regressions)} OpInfo sample(s) expected to pass now fail:\n"
                    + "\n".join(lines)
                    + f"\nLook at one: python {HARNESS.relative_to(REPO)} check --ops OP; "
                    f"if a failure is intended, update the expectations with `{UPDATE_HINT}`.{note}",
                    pytrace=False)


def _torch_version() -> str:
    import torch

    return torch.__version__


def test_torch_fp64_rule_accepts_fused_rounding_only() -> None:
    """The reclassification rule for narrow-dtype results (torch._dynamo.utils.same's float64
    check): multilabel_soft_margin_loss f16 on XLA, whose fused kernel keeps the f16 products in
    f32 (got -0.493408, eager -0.492676, float64 -0.492197), passes; a result off by more than 3x
    eager's error, or off where eager is exact, does not."""
    sys.path.insert(0, str(HARNESS.parent))
    from opinfo.classify import torch_fp64_rule

    ref = -0.492197
    assert torch_fp64_rule([-0.493408], [-0.492676], [ref], 1e-3)[0]
    assert not torch_fp64_rule([-0.4946], [-0.492676], [ref], 1e-3)[0]
    assert not torch_fp64_rule([1.0 + 2**-10], [1.0], [1.0], 1e-3)[0]
    assert not torch_fp64_rule([float("nan")], [-0.492676], [ref], 1e-3)[0]
